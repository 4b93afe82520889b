// The Reconciler against a real kube-apiserver (tests/kube-test-cluster/) with the real CRD
// (crds/): the test plays the kubelet, writing pod status through the pods/status subresource
// (Running, exit codes, DisruptionTarget), and checks what the operator does about it: pods,
// services, the token secret, ownership, environment, restarts and backoffLimit, cleanPodPolicy,
// suspend, deadlines, TTL, conditions, events and preemption notices.
//
// The reconciler reads through DirectClusterView (no cache lag, so every Reconcile sees the
// previous one's writes); the informer-driven controller is exercised by the operator test.
// Notices go to a recording PreemptionNotifier here; the gRPC delivery to a real coordination
// service is preemption_notifier_test's.
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "api/v1alpha1/decode.h"
#include "api/v1alpha1/status_json.h"
#include "api/v1alpha1/yaml_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "coordinator/base/job_certificates.h"
#include "coordinator/base/job_roles.h"
#include "operator/controller/cluster_view.h"
#include "operator/controller/pod_group.h"
#include "operator/controller/reconciler.h"
#include "operator/controller/replica_objects.h"
#include "operator/controller/write_executor.h"
#include "operator/kube/cpprest_transport.h"
#include "operator/kube/kube_client_impl.h"
#include "operator/kube/kube_config.h"
#include "operator/kube/resource.h"
#include "tests/operator/controller/kubelet_status.h"
#include "tests/operator/kube/kube_cluster_env.h"
#include "tests/support/s3_test_server.h"
#include "tests/support/wait_for.h"

namespace tj::op {
namespace {

using kube::testing::KubeClusterEnvironment;
using nlohmann::json;
using ::testing::HasSubstr;

class RecordingEvents : public EventSink {
 public:
  void Record(const json& object, EventType type, const std::string& reason,
              const std::string& message) override {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(absl::StrCat(type == EventType::kWarning ? "Warning " : "Normal ", reason,
                                   ": ", message));
  }
  std::vector<std::string> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  bool Has(const std::string& text) const {
    for (const std::string& e : events()) {
      if (e.find(text) != std::string::npos) return true;
    }
    return false;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> events_;
};

class RecordingNotifier : public PreemptionNotifier {
 public:
  void Send(PreemptionNotice notice) override {
    std::lock_guard<std::mutex> lock(mu_);
    notices_.push_back(std::move(notice));
  }
  std::vector<PreemptionNotice> notices() const {
    std::lock_guard<std::mutex> lock(mu_);
    return notices_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<PreemptionNotice> notices_;
};

// What the coordinator would publish, without a coordinator.
class FixedProgress : public CoordinatorProgress {
 public:
  void Refresh(const std::string& job, const std::string& address, const std::string& token,
               std::shared_ptr<const CoordinatorTls> tls) override {
    std::lock_guard<std::mutex> lock(mu_);
    refreshed_ = job + " " + address + " " + (token.empty() ? "no token" : "token") + " " +
                 (tls ? "tls " + tls->server_name : "plaintext");
  }
  std::optional<v1alpha1::TrainingProgress> Latest(const std::string& job) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return progress_;
  }
  void Forget(const std::string& job) override {}
  void Set(int64_t step, int64_t checkpoint) {
    std::lock_guard<std::mutex> lock(mu_);
    progress_ = v1alpha1::TrainingProgress{};
    progress_->step = step;
    progress_->last_checkpoint_step = checkpoint;
  }
  std::string refreshed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return refreshed_;
  }

 private:
  mutable std::mutex mu_;
  std::optional<v1alpha1::TrainingProgress> progress_;
  std::string refreshed_;
};

// Forwards to the real client; creates wait while the gate is closed, and are counted, so a
// test can hold them "in flight" while it reconciles again.
class GatedClient : public kube::KubeClient {
 public:
  explicit GatedClient(kube::KubeClient& inner) : inner_(inner) {}

  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  int creates_started() const {
    std::lock_guard<std::mutex> lock(mu_);
    return creates_;
  }
  int waiting() const {
    std::lock_guard<std::mutex> lock(mu_);
    return waiting_;
  }
  int status_writes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return status_writes_;
  }

  absl::StatusOr<json> Get(const kube::ResourceRef& ref) override { return inner_.Get(ref); }
  absl::StatusOr<json> List(const kube::ResourceRef& ref,
                            const kube::ListOptions& options) override {
    return inner_.List(ref, options);
  }
  absl::StatusOr<json> Create(const kube::ResourceRef& ref, const json& object) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++creates_;
      ++waiting_;
      cv_.wait(lock, [&] { return open_; });
      --waiting_;
    }
    return inner_.Create(ref, object);
  }
  absl::StatusOr<json> Update(const kube::ResourceRef& ref, const json& object) override {
    return inner_.Update(ref, object);
  }
  absl::StatusOr<json> UpdateStatus(const kube::ResourceRef& ref, const json& object) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++status_writes_;
    }
    return inner_.UpdateStatus(ref, object);
  }
  absl::StatusOr<json> MergePatch(const kube::ResourceRef& ref, const json& patch) override {
    return inner_.MergePatch(ref, patch);
  }
  absl::StatusOr<json> JsonPatch(const kube::ResourceRef& ref, const json& operations) override {
    return inner_.JsonPatch(ref, operations);
  }
  absl::StatusOr<json> Delete(const kube::ResourceRef& ref,
                              const kube::DeleteOptions& options) override {
    return inner_.Delete(ref, options);
  }
  absl::Status Watch(const kube::ResourceRef& ref, const std::string& resource_version,
                     const kube::WatchOptions& options,
                     const kube::WatchHandler& handler) override {
    return inner_.Watch(ref, resource_version, options, handler);
  }

 private:
  kube::KubeClient& inner_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  int creates_ = 0;
  int waiting_ = 0;
  int status_writes_ = 0;
};

std::string Quote(const std::string& s) { return "'" + s + "'"; }

std::string Kubectl(const std::string& args, bool* ok = nullptr) {
  bool success = false;
  std::string out = kube::testing::RunCommand(
      "kubectl --kubeconfig=" + Quote(KubeClusterEnvironment::kubeconfig()) + " " + args + " 2>&1",
      &success);
  if (ok) *ok = success;
  return out;
}

const char* kJobYaml = R"(apiVersion: trainingjob.dev/v1alpha1
kind: TrainingJob
metadata:
  name: digits
spec:
  runPolicy: {backoffLimit: BACKOFF EXTRA_RUN_POLICY}
  replicaSpecs:
    Coordinator:
      template:
        spec:
          containers:
          - {name: trainer, image: "trainingjob/runtime:dev", command: [tj-train]}
    PS:
      template:
        spec:
          containers:
          - {name: trainer, image: "trainingjob/runtime:dev", command: [tj-train]}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - name: trainer
            image: trainingjob/runtime:dev
            command: [tj-train]
            env: [{name: MODEL, value: softmax}]
)";

class ReconcilerIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!KubeClusterEnvironment::skip_reason().empty()) return;
    bool ok = false;
    const std::string applied =
        Kubectl("apply -f " + Quote(std::string(TJ_SOURCE_DIR) + "/crds/trainingjob.dev_trainingjobs.yaml"), &ok);
    ASSERT_TRUE(ok) << applied;
    ASSERT_TRUE(testing::WaitFor([] {
      return Kubectl("get crd trainingjobs.trainingjob.dev -o "
                     "jsonpath='{.status.conditions[?(@.type==\"Established\")].status}'") ==
             "True";
    })) << "the CRD never became Established";
  }

  void SetUp() override {
    if (!KubeClusterEnvironment::skip_reason().empty()) {
      GTEST_SKIP() << KubeClusterEnvironment::skip_reason();
    }
    auto config = kube::LoadKubeConfigFiles({KubeClusterEnvironment::kubeconfig()});
    ASSERT_TRUE(config.ok()) << config.status();
    auto transport = kube::CppRestTransport::Create(*config);
    ASSERT_TRUE(transport.ok()) << transport.status();
    client_ = std::make_unique<kube::KubeClientImpl>(
        std::shared_ptr<kube::HttpTransport>(std::move(*transport)));
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    ns_ = "rc-" + name.substr(0, 50);
    auto created =
        client_->Create(*kube::Resource("namespaces"), json{{"metadata", {{"name", ns_}}}});
    ASSERT_TRUE(created.ok() || absl::IsAlreadyExists(created.status())) << created.status();
    view_ = std::make_unique<DirectClusterView>(*client_);
    ReconcilerOptions options;
    options.clock = [this] { return now_; };
    options.terminating_pod_timeout = absl::Minutes(5);
    options.progress = &progress_;
    reconciler_ = std::make_unique<Reconciler>(*view_, *client_, notifier_, events_, options);
  }

  void CreateJob(int backoff_limit = 6, const std::string& extra_run_policy = "",
                 const std::string& name = "digits") {
    std::string yaml = absl::StrReplaceAll(
        kJobYaml, {{"BACKOFF", std::to_string(backoff_limit)},
                   {"EXTRA_RUN_POLICY", extra_run_policy.empty() ? "" : ", " + extra_run_policy},
                   {"name: digits", "name: " + name}});
    auto manifest = v1alpha1::YamlToJson(yaml, "job.yaml");
    ASSERT_TRUE(manifest.ok()) << manifest.status();
    auto created = client_->Create(*kube::Resource("trainingjobs", ns_), *manifest);
    ASSERT_TRUE(created.ok()) << created.status();
  }

  ReconcileResult Reconcile(const std::string& name = "digits") {
    ReconcileResult result = reconciler_->Reconcile(ns_ + "/" + name);
    EXPECT_TRUE(result.status.ok()) << result.status;
    return result;
  }

  // A fresh reconciler (no memory) that asks `scheduler` for gang scheduling.
  void UseGangScheduler(GangScheduler scheduler) {
    ReconcilerOptions options;
    options.clock = [this] { return now_; };
    options.pods.gang_scheduler = scheduler;
    reconciler_ = std::make_unique<Reconciler>(*view_, *client_, notifier_, events_, options);
  }

  json Job(const std::string& name = "digits") {
    auto job = client_->Get(*kube::Resource("trainingjobs", ns_, name));
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? *job : json::object();
  }
  // A copy: ranging over a member of the temporary Job() would dangle.
  json Conditions(const std::string& name = "digits") {
    json job = Job(name);
    return job.contains("status") ? job["status"].value("conditions", json::array()) : json::array();
  }
  std::string State(const std::string& name = "digits") {
    json job = Job(name);
    return job.contains("status") ? job["status"].value("state", "") : "";
  }

  std::map<std::string, json> Pods() {
    std::map<std::string, json> out;
    auto list = client_->List(*kube::Resource("pods", ns_), {});
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return out;
    for (const json& pod : (*list)["items"]) {
      if (pod["metadata"].contains("deletionTimestamp")) continue;
      out[pod["metadata"]["name"].get<std::string>()] = pod;
    }
    return out;
  }

  // What a kubelet writes.
  void SetRunning(const std::string& pod, const std::string& ip = "127.0.0.9") {
    Patch(pod, kubelet::RunningPodStatus(ip));
  }
  void SetExited(const std::string& pod, int exit_code, json conditions = json::array()) {
    json status = kubelet::ExitedPodStatus(exit_code);
    if (!conditions.empty()) status["conditions"] = conditions;
    Patch(pod, status);
  }
  void Patch(const std::string& pod, const json& status) {
    kube::ResourceRef ref = *kube::Resource("pods", ns_, pod);
    ref.subresource = "status";
    auto patched = client_->MergePatch(ref, {{"status", status}});
    ASSERT_TRUE(patched.ok()) << patched.status();
  }
  void AllRunning() {
    for (const auto& [name, pod] : Pods()) SetRunning(name);
  }
  json Secret() {
    auto secret = client_->Get(*kube::Resource("secrets", ns_, "digits-job-token"));
    EXPECT_TRUE(secret.ok()) << secret.status();
    return secret.ok() ? (*secret)["data"] : json::object();
  }
  // A key of the job's Secret, decoded ("" when absent).
  std::string SecretValue(const std::string& key) {
    const json data = Secret();
    std::string decoded;
    if (!data.contains(key) || !absl::Base64Unescape(data[key].get<std::string>(), &decoded)) {
      return "";
    }
    return decoded;
  }

  std::unique_ptr<kube::KubeClient> client_;
  std::unique_ptr<DirectClusterView> view_;
  RecordingEvents events_;
  RecordingNotifier notifier_;
  FixedProgress progress_;
  std::unique_ptr<Reconciler> reconciler_;
  std::string ns_;
  absl::Time now_ = absl::Now();
};

TEST_F(ReconcilerIntegrationTest, CreatesOwnedPodsServicesAndSecretOnceAndOnlyOnce) {
  CreateJob();
  Reconcile();
  const std::map<std::string, json> pods = Pods();
  EXPECT_THAT(pods, ::testing::SizeIs(4));
  for (const char* name : {"digits-coordinator-0", "digits-ps-0", "digits-worker-0",
                           "digits-worker-1"}) {
    ASSERT_TRUE(pods.contains(name)) << name;
    const json& pod = pods.at(name);
    EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], Job()["metadata"]["uid"]);
    EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
    bool has_tf_config = false;
    for (const json& env : pod["spec"]["containers"][0]["env"]) has_tf_config |= env["name"] == "TF_CONFIG";
    EXPECT_TRUE(has_tf_config) << name;
    auto service = client_->Get(*kube::Resource("services", ns_, name));
    ASSERT_TRUE(service.ok()) << service.status();
    EXPECT_EQ((*service)["spec"]["clusterIP"], "None");
  }
  auto secret = client_->Get(*kube::Resource("secrets", ns_, "digits-job-token"));
  ASSERT_TRUE(secret.ok()) << secret.status();
  EXPECT_FALSE((*secret)["data"]["token"].get<std::string>().empty());
  EXPECT_EQ(State(), "Created");
  const json status = Job()["status"];
  EXPECT_EQ(status["workerSelector"],
            "trainingjob.dev/job-name=digits,trainingjob.dev/replica-type=worker");
  EXPECT_EQ(status["observedGeneration"], 1);

  // Level-based: once the status has caught up with the pods it created (the second reconcile
  // counts them), reconciling the same world changes nothing.
  Reconcile();
  const std::string version = Job()["metadata"]["resourceVersion"];
  Reconcile();
  EXPECT_EQ(Pods().size(), 4u);
  EXPECT_EQ(Job()["metadata"]["resourceVersion"], version) << "nothing to write, nothing written";
  // One Event for everything the first reconcile created, naming it all; no separate phase
  // Event for Created (a burst of new jobs posts one Event per job).
  EXPECT_TRUE(events_.Has(
      "Normal Created: created the token secret digits-job-token, 4 pods (digits-coordinator-0, "
      "digits-ps-0, digits-worker-0, digits-worker-1) and 4 services (digits-coordinator-0, "
      "digits-ps-0, digits-worker-0, digits-worker-1)"))
      << ::testing::PrintToString(events_.events());
  EXPECT_EQ(events_.events().size(), 1u) << ::testing::PrintToString(events_.events());
}

// The asynchronous path: creates handed to a 16-thread executor, held in flight while the same
// jobs are reconciled again and again. Expectations keep every later reconcile from creating
// anything: exactly one pod (and Service, and Secret) per replica, one Event per job, one status
// write per job.
TEST_F(ReconcilerIntegrationTest, AsyncCreatesMakeOnePodPerReplicaWhileReconcilesRepeat) {
  constexpr int kJobs = 6;
  constexpr int kObjectsPerJob = 4 + 4 + 1;  // pods, services, the token secret
  GatedClient gated(*client_);
  ThreadPoolWriteExecutor executor(16, 1024);
  ReconcilerOptions options;
  options.clock = [this] { return now_; };
  options.writes = &executor;
  Reconciler reconciler(*view_, gated, notifier_, events_, options);
  for (int j = 0; j < kJobs; ++j) CreateJob(6, "", absl::StrCat("burst-", j));

  gated.Close();
  for (int j = 0; j < kJobs; ++j) {
    ReconcileResult result = reconciler.Reconcile(absl::StrCat(ns_, "/burst-", j));
    ASSERT_TRUE(result.status.ok()) << result.status;
  }
  // Every create has started and waits at the gate; none went through yet.
  ASSERT_TRUE(testing::WaitFor([&] { return gated.waiting() == 16; }));
  const size_t queued = executor.Queued();  // every thread is held: nothing leaves the queue
  EXPECT_GT(queued, 0u);
  for (int round = 0; round < 5; ++round) {
    for (int j = 0; j < kJobs; ++j) {
      ReconcileResult result = reconciler.Reconcile(absl::StrCat(ns_, "/burst-", j));
      ASSERT_TRUE(result.status.ok()) << result.status;
      ASSERT_TRUE(result.requeue_after.has_value()) << "comes back when the expectations expire";
      EXPECT_LE(*result.requeue_after, absl::Minutes(5));
    }
  }
  EXPECT_EQ(gated.creates_started(), 16) << "only the executor's 16 threads are writing";
  EXPECT_EQ(executor.Queued(), queued) << "nothing more was queued by the repeated reconciles";
  EXPECT_FALSE(reconciler.expectations().Pending(ns_ + "/burst-0").empty());

  gated.Open();
  ASSERT_TRUE(executor.WaitIdle(std::chrono::milliseconds(60'000)));
  // And once everything is observed, reconciling changes nothing.
  for (int round = 0; round < 2; ++round) {
    for (int j = 0; j < kJobs; ++j) {
      ReconcileResult result = reconciler.Reconcile(absl::StrCat(ns_, "/burst-", j));
      ASSERT_TRUE(result.status.ok()) << result.status;
    }
    ASSERT_TRUE(executor.WaitIdle(std::chrono::milliseconds(60'000)));
  }
  EXPECT_EQ(gated.creates_started(), kJobs * kObjectsPerJob);
  EXPECT_EQ(gated.status_writes(), kJobs) << "one status write per job";
  EXPECT_EQ(reconciler.counters().pods_created, kJobs * 4);
  const std::map<std::string, json> pods = Pods();
  EXPECT_EQ(pods.size(), static_cast<size_t>(kJobs * 4));
  for (int j = 0; j < kJobs; ++j) {
    const std::string job = absl::StrCat("burst-", j);
    for (const char* replica : {"-coordinator-0", "-ps-0", "-worker-0", "-worker-1"}) {
      EXPECT_TRUE(pods.contains(job + replica)) << job << replica;
    }
    EXPECT_TRUE(reconciler.expectations().Pending(ns_ + "/" + job).empty());
    EXPECT_EQ(State(job), "Created");
    EXPECT_EQ(Job(job)["status"]["replicaStatuses"]["Worker"]["active"], 2)
        << "the requested pods counted as active by the one status write";
  }
  int created_events = 0;
  for (const std::string& e : events_.events()) created_events += e.starts_with("Normal Created: ");
  EXPECT_EQ(created_events, kJobs) << ::testing::PrintToString(events_.events());
}

// A create the API server refuses (a ResourceQuota of 3 pods for a 4-pod job): a Warning Event
// naming it, Created False with reason FailedCreate, a requeue with backoff, and the create
// retried on each reconcile until it goes through; then Created is True again.
TEST_F(ReconcilerIntegrationTest, ARefusedCreateIsAWarningAConditionAndIsRetried) {
  bool ok = false;
  std::string out =
      Kubectl(absl::StrCat("-n ", ns_, " create quota three-pods --hard=pods=3"), &ok);
  ASSERT_TRUE(ok) << out;
  ASSERT_TRUE(testing::WaitFor([&] {
    return Kubectl(absl::StrCat("-n ", ns_,
                                " get quota three-pods -o jsonpath='{.status.hard.pods}'")) == "3";
  })) << "the quota controller never took up the quota";
  std::mutex mu;
  std::vector<std::pair<std::string, bool>> writes_done;
  ReconcilerOptions options;
  options.clock = [this] { return now_; };
  options.on_writes_done = [&](const std::string& key, bool failed) {
    std::lock_guard<std::mutex> lock(mu);
    writes_done.emplace_back(key, failed);
  };
  reconciler_ = std::make_unique<Reconciler>(*view_, *client_, notifier_, events_, options);
  CreateJob();
  Reconcile();
  EXPECT_EQ(Pods().size(), 3u);
  EXPECT_TRUE(events_.Has("Warning FailedCreate: creating pod digits-worker-1 failed: "))
      << ::testing::PrintToString(events_.events());
  EXPECT_TRUE(events_.Has("exceeded quota")) << ::testing::PrintToString(events_.events());
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(writes_done.size(), 1u);
    EXPECT_EQ(writes_done[0], std::make_pair(ns_ + "/digits", true)) << "requeued with backoff";
  }

  // The retry (what the requeue brings): the condition says why, and the create is tried again.
  Reconcile();
  json created;
  for (const json& c : Conditions()) {
    if (c["type"] == "Created") created = c;
  }
  EXPECT_EQ(created["status"], "False");
  EXPECT_EQ(created["reason"], "FailedCreate");
  EXPECT_THAT(created["message"].get<std::string>(), HasSubstr("digits-worker-1"));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(writes_done.size(), 2u) << "refused again, requeued again";
  }

  out =
      Kubectl(absl::StrCat("-n ", ns_,
                           " patch quota three-pods -p '{\"spec\":{\"hard\":{\"pods\":\"10\"}}}'"),
              &ok);
  ASSERT_TRUE(ok) << out;
  ASSERT_TRUE(testing::WaitFor([&] {
    return Kubectl(absl::StrCat("-n ", ns_,
                                " get quota three-pods -o jsonpath='{.status.hard.pods}'")) == "10";
  }));
  Reconcile();
  EXPECT_EQ(Pods().size(), 4u) << "retried, never lost";
  {
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_EQ(writes_done.size(), 3u);
    EXPECT_EQ(writes_done[2], std::make_pair(ns_ + "/digits", false))
        << "the failure cleared: requeued so that Created turns True";
  }
  Reconcile();
  for (const json& c : Conditions()) {
    if (c["type"] == "Created") created = c;
  }
  EXPECT_EQ(created["status"], "True");
}

TEST_F(ReconcilerIntegrationTest, RestartsAFailedWorkerThenSucceedsAndCleansUp) {
  CreateJob();
  Reconcile();
  AllRunning();
  Reconcile();
  EXPECT_EQ(State(), "Running");
  EXPECT_EQ(Job()["status"]["replicaStatuses"]["Worker"]["active"], 2);

  const std::string old_uid = Pods()["digits-worker-1"]["metadata"]["uid"];
  SetExited("digits-worker-1", 137);  // SIGKILL: restarts under ExitCode
  Reconcile();
  const std::map<std::string, json> pods = Pods();
  ASSERT_TRUE(pods.contains("digits-worker-1"));
  EXPECT_NE(pods.at("digits-worker-1")["metadata"]["uid"], old_uid) << "recreated";
  json status = Job()["status"];
  EXPECT_EQ(status["restartCount"], 1);
  EXPECT_EQ(status["replicaStatuses"]["Worker"]["restarts"], 1);
  EXPECT_EQ(status["state"], "Restarting");
  EXPECT_TRUE(events_.Has("Warning RestartingReplica: digits-worker-1"));

  SetRunning("digits-worker-1");
  Reconcile();
  EXPECT_EQ(State(), "Running");

  SetExited("digits-coordinator-0", 0);
  Reconcile();
  EXPECT_EQ(State(), "Succeeded");
  status = Job()["status"];
  EXPECT_TRUE(status.contains("completionTime"));
  // cleanPodPolicy Running (the default): no PS or worker left running; the coordinator's
  // finished pod stays for its logs.
  const std::map<std::string, json> left = Pods();
  EXPECT_FALSE(left.contains("digits-ps-0"));
  EXPECT_FALSE(left.contains("digits-worker-0"));
  EXPECT_FALSE(left.contains("digits-worker-1"));
  EXPECT_TRUE(left.contains("digits-coordinator-0"));
  Reconcile();  // finished stays finished
  EXPECT_EQ(State(), "Succeeded");
  EXPECT_EQ(Pods().size(), 1u);
}

TEST_F(ReconcilerIntegrationTest, ReportsTheCoordinatorsStepAndComesBackForMore) {
  CreateJob();
  Reconcile();
  AllRunning();
  SetRunning("digits-coordinator-0", "127.0.0.46");
  progress_.Set(300, 250);
  ReconcileResult running = Reconcile();
  EXPECT_EQ(progress_.refreshed(),
            ns_ + "/digits 127.0.0.46:2222 token tls digits-coordinator-0." + ns_ + ".svc");
  const json status = Job()["status"];
  EXPECT_EQ(status["step"], 300);
  EXPECT_EQ(status["lastCheckpointStep"], 250);
  ASSERT_TRUE(running.requeue_after.has_value()) << "a running job is polled for progress";
  EXPECT_LE(*running.requeue_after, absl::Seconds(30));
}

TEST_F(ReconcilerIntegrationTest, PermanentExitCodeFailsTheJobWithAPreciseCondition) {
  CreateJob();
  Reconcile();
  AllRunning();
  Reconcile();
  SetExited("digits-worker-0", 1);
  Reconcile();
  EXPECT_EQ(State(), "Failed");
  json failed;
  for (const json& c : Conditions()) {
    if (c["type"] == "Failed") failed = c;
  }
  EXPECT_EQ(failed["reason"], "PermanentExitCode");
  EXPECT_THAT(failed["message"].get<std::string>(), HasSubstr("worker 0"));
  EXPECT_FALSE(Pods().contains("digits-ps-0")) << "no PS left running after failure";
}

TEST_F(ReconcilerIntegrationTest, BackoffLimitCountsCoordinatorRestartsUnderExitCode) {
  CreateJob(/*backoff_limit=*/1);
  Reconcile();
  AllRunning();
  Reconcile();
  SetExited("digits-coordinator-0", 42);  // the restart exit code: restart, counted
  Reconcile();
  json status = Job()["status"];
  EXPECT_EQ(status["coordinatorRestarts"], 1);
  EXPECT_EQ(status["restartCount"], 1);
  SetRunning("digits-coordinator-0");
  Reconcile();
  SetExited("digits-coordinator-0", 42);
  Reconcile();
  EXPECT_EQ(State(), "Failed");
  bool backoff = false;
  for (const json& c : Conditions()) {
    backoff |= c["type"] == "Failed" && c["reason"] == "BackoffLimitExceeded";
  }
  EXPECT_TRUE(backoff) << Job()["status"].dump();
}

TEST_F(ReconcilerIntegrationTest, DisruptionTargetReachesTheCoordinatorOnceAndIsNotCounted) {
  CreateJob();
  Reconcile();
  AllRunning();
  SetRunning("digits-coordinator-0", "127.0.0.44");
  Reconcile();
  const json disruption = json::array({{{"type", "DisruptionTarget"},
                                        {"status", "True"},
                                        {"reason", "EvictionByEvictionAPI"},
                                        // The disruption controller resets a DisruptionTarget
                                        // that no deletion followed for 2 minutes, from this.
                                        {"lastTransitionTime", v1alpha1::FormatKubernetesTime(absl::Now())},
                                        {"message", "Eviction API: evicting"}}});
  Patch("digits-ps-0", {{"conditions", disruption}});
  Reconcile();
  Reconcile();
  std::vector<PreemptionNotice> notices = notifier_.notices();
  ASSERT_EQ(notices.size(), 1u) << "one notice per pod and signal";
  EXPECT_EQ(notices[0].coordinator_address, "127.0.0.44:2222");
  EXPECT_EQ(notices[0].task_type, "ps");
  EXPECT_EQ(notices[0].task_index, 0);
  EXPECT_EQ(notices[0].reason, "DisruptionTarget/EvictionByEvictionAPI");
  EXPECT_FALSE(notices[0].token.empty()) << "the job's token authenticates the notice";
  // Over mutual TLS: the job's CA, the operator's client certificate, the coordinator's name.
  ASSERT_NE(notices[0].tls, nullptr);
  EXPECT_EQ(notices[0].tls->ca_pem, SecretValue("ca.crt"));
  EXPECT_EQ(notices[0].tls->cert_pem, SecretValue("control.crt"));
  EXPECT_EQ(notices[0].tls->key_pem, SecretValue("control.key"));
  EXPECT_EQ(notices[0].tls->server_name, "digits-coordinator-0." + ns_ + ".svc");
  EXPECT_EQ(Job()["status"]["preemptions"], 1);

  // The PS is killed (SIGTERM) and the coordinator exits with the restart code right after: the
  // disruption's consequences, not failures: both restart, neither is counted.
  SetExited("digits-ps-0", 143, disruption);
  SetExited("digits-coordinator-0", 42);
  Reconcile();
  const json status = Job()["status"];
  EXPECT_EQ(status["restartCount"], 0) << status.dump();
  EXPECT_EQ(status["coordinatorRestarts"], 1);
  EXPECT_EQ(status["replicaStatuses"]["PS"]["restarts"], 1);
  EXPECT_EQ(Pods().size(), 4u);
}

// A pod on a node that stopped answering is deleted by the taint manager but stays Terminating:
// only its kubelet could confirm. The operator deletes it without grace once
// terminating_pod_timeout has passed since its deletion deadline, and the replica is recreated.
TEST_F(ReconcilerIntegrationTest, APodStuckTerminatingOnALostNodeIsForceDeletedAndReplaced) {
  const std::string node_name = "lost-" + ns_.substr(0, 40);
  // Tainted so the test cluster's scheduler places nothing of other tests there.
  auto node = client_->Create(
      *kube::Resource("nodes"),
      json{{"metadata", {{"name", node_name}}},
           {"spec", {{"taints", json::array({{{"key", "trainingjob.dev/test-lost-node"},
                                              {"effect", "NoSchedule"}}})}}}});
  ASSERT_TRUE(node.ok() || absl::IsAlreadyExists(node.status())) << node.status();
  kube::ResourceRef node_status = *kube::Resource("nodes", "", node_name);
  node_status.subresource = "status";
  const json not_ready = {{"status",
                           {{"conditions", json::array({{{"type", "Ready"},
                                                         {"status", "Unknown"},
                                                         {"reason", "NodeStatusUnknown"},
                                                         {"message", "Kubelet stopped posting node status."}}})}}}};
  ASSERT_TRUE(client_->MergePatch(node_status, not_ready).ok());

  CreateJob();
  Reconcile();
  const std::string old_uid = Pods()["digits-ps-0"]["metadata"]["uid"];
  // What the scheduler does: bind the PS to the node; then the node is lost with it.
  kube::ResourceRef bindings;
  bindings.version = "v1";
  bindings.resource = "bindings";
  bindings.namespace_name = ns_;
  auto bound = client_->Create(
      bindings,
      json{{"apiVersion", "v1"},
           {"kind", "Binding"},
           {"metadata", {{"name", "digits-ps-0"}}},
           {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node_name}}}});
  ASSERT_TRUE(bound.ok()) << bound.status();
  AllRunning();
  Reconcile();
  // The taint manager's eviction: a graceful delete no kubelet will ever complete.
  kube::DeleteOptions graceful;
  graceful.grace_period_seconds = 30;
  ASSERT_TRUE(client_->Delete(*kube::Resource("pods", ns_, "digits-ps-0"), graceful).ok());
  auto terminating = client_->Get(*kube::Resource("pods", ns_, "digits-ps-0"));
  ASSERT_TRUE(terminating.ok()) << "a bound pod is deleted gracefully: " << terminating.status();
  ASSERT_TRUE(terminating->at("metadata").contains("deletionTimestamp"));

  now_ = absl::Now() + absl::Seconds(30) + absl::Minutes(4);  // before the timeout: left alone
  Reconcile();
  auto still = client_->Get(*kube::Resource("pods", ns_, "digits-ps-0"));
  ASSERT_TRUE(still.ok()) << "force-deleted before --terminating-pod-timeout";
  EXPECT_EQ(still->at("metadata").value("uid", ""), old_uid);
  EXPECT_FALSE(events_.Has("Warning ForceDeletedPod"));

  now_ = absl::Now() + absl::Seconds(30) + absl::Minutes(5) + absl::Seconds(5);
  Reconcile();
  EXPECT_TRUE(events_.Has("Warning ForceDeletedPod: digits-ps-0 was stuck Terminating on node " +
                          node_name));
  ASSERT_TRUE(testing::WaitFor([&] {
    Reconcile();  // the replica is missing now: recreated
    auto pod = client_->Get(*kube::Resource("pods", ns_, "digits-ps-0"));
    return pod.ok() && pod->at("metadata").value("uid", "") != old_uid &&
           !pod->at("metadata").contains("deletionTimestamp");
  })) << "the PS replica was not recreated after the force delete";

  kube::DeleteOptions now;
  ASSERT_TRUE(client_->Delete(*kube::Resource("nodes", "", node_name), now).ok());
}

// Whether a pod's trainer runs TLS, and which Secret keys its volume mounts (key -> path).
bool PodHasTlsDir(const json& pod) {
  for (const json& env : pod["spec"]["containers"][0]["env"]) {
    if (env["name"] == "TJ_TLS_DIR") return true;
  }
  return false;
}
std::map<std::string, std::string> MountedKeys(const json& pod) {
  std::map<std::string, std::string> out;
  for (const json& volume : pod["spec"]["volumes"]) {
    if (volume["name"] != "tj-job-token") continue;
    for (const json& item : volume["secret"]["items"]) out[item["key"]] = item["path"];
  }
  return out;
}

// A new job's Secret holds its CA, a certificate per role naming that role's Services, and the
// operator's control certificate; each pod mounts the CA and its own role's pair only (never the
// CA's key) and is given TJ_TLS_DIR. Scaling up re-issues the role's certificate from the same CA.
TEST_F(ReconcilerIntegrationTest, EachJobGetsItsOwnCaAndEachPodItsRolesCertificate) {
  CreateJob();
  Reconcile();
  const std::string ca = SecretValue("ca.crt");
  ASSERT_THAT(ca, HasSubstr("BEGIN CERTIFICATE"));
  EXPECT_THAT(SecretValue("ca.key"), HasSubstr("PRIVATE KEY"));
  auto names = [&](const std::string& role) {
    auto dns = CertificateDnsNames(SecretValue(role + ".crt"));
    EXPECT_TRUE(dns.ok()) << role << ": " << dns.status();
    return dns.ok() ? *dns : std::vector<std::string>();
  };
  const std::string svc = "." + ns_ + ".svc";
  EXPECT_THAT(names("coordinator"), ::testing::ElementsAre("digits-coordinator-0" + svc));
  EXPECT_THAT(names("ps"), ::testing::ElementsAre("digits-ps-0" + svc));
  EXPECT_THAT(names("worker"),
              ::testing::ElementsAre("digits-worker-0" + svc, "digits-worker-1" + svc));
  EXPECT_THAT(SecretValue("control.key"), HasSubstr("PRIVATE KEY"));
  EXPECT_TRUE(names("control").empty()) << "the operator's certificate is a client's";

  const std::map<std::string, json> pods = Pods();
  ASSERT_EQ(pods.size(), 4u);
  for (const auto& [name, pod] : pods) {
    EXPECT_TRUE(PodHasTlsDir(pod)) << name;
    const std::string role = pod["metadata"]["labels"]["trainingjob.dev/replica-type"];
    EXPECT_EQ(MountedKeys(pod),
              (std::map<std::string, std::string>{{role, role},
                                                  {"verifiers", "verifiers"},
                                                  {"ca.crt", "tls/ca.crt"},
                                                  {role + ".crt", "tls/tls.crt"},
                                                  {role + ".key", "tls/tls.key"}}))
        << name;
  }

  // Another job in the namespace: another CA.
  CreateJob(6, "", "other");
  Reconcile("other");
  auto other = client_->Get(*kube::Resource("secrets", ns_, "other-job-token"));
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE((*other)["data"]["ca.crt"], Secret()["ca.crt"]);

  // Scaled up: the worker certificate names the new worker, from the same CA; the others stay.
  const json before = Secret();
  auto scaled = client_->MergePatch(
      *kube::Resource("trainingjobs", ns_, "digits"),
      {{"spec", {{"replicaSpecs", {{"Worker", {{"replicas", 3}}}}}}}});
  ASSERT_TRUE(scaled.ok()) << scaled.status();
  Reconcile();
  EXPECT_THAT(names("worker"), ::testing::ElementsAre("digits-worker-0" + svc,
                                                      "digits-worker-1" + svc,
                                                      "digits-worker-2" + svc));
  const json after = Secret();
  for (const char* same : {"ca.crt", "ca.key", "ps.crt", "coordinator.crt", "control.crt"}) {
    EXPECT_EQ(after[same], before[same]) << same;
  }
  EXPECT_TRUE(Pods().contains("digits-worker-2"));
}

// A Secret of an operator before TLS (and before role credentials: the token only) is completed
// by a patch, keeping its token. Pods it made serve plaintext, so the job's new pods do too, and
// the operator reads progress in plaintext; once all of its pods are gone (suspended here), its
// pods run TLS.
TEST_F(ReconcilerIntegrationTest, AnOlderOperatorsSecretIsUpgradedAndItsJobSwitchesToTlsWhole) {
  CreateJob();
  const v1alpha1::TrainingJob job = v1alpha1::DecodeTrainingJob(Job()).job;
  json old_secret = BuildJobTokenSecret(job, "older-operators-secret", json::object());
  old_secret["data"] = {{"token", old_secret["data"]["token"]}};
  ASSERT_TRUE(client_->Create(*kube::Resource("secrets", ns_), old_secret).ok());
  auto plaintext_pods = JobPods::Create(std::make_shared<const v1alpha1::TrainingJob>(job), false);
  ASSERT_TRUE(plaintext_pods.ok());
  auto old_pod = BuildReplicaPod(**plaintext_pods, {ReplicaType::kWorker, 0});
  ASSERT_TRUE(old_pod.ok());
  ASSERT_TRUE(client_->Create(*kube::Resource("pods", ns_), *old_pod).ok());

  Reconcile();
  EXPECT_EQ(SecretValue("token"), "older-operators-secret");
  EXPECT_EQ(SecretValue("verifiers"),
            FormatRoleVerifiers(DeriveRoleVerifiers("older-operators-secret")));
  EXPECT_THAT(SecretValue("ca.crt"), HasSubstr("BEGIN CERTIFICATE"));
  EXPECT_THAT(SecretValue("worker.crt"), HasSubstr("BEGIN CERTIFICATE"));
  EXPECT_THAT(SecretValue("control.crt"), HasSubstr("BEGIN CERTIFICATE"));
  const std::string ca = SecretValue("ca.crt");
  std::map<std::string, json> pods = Pods();
  ASSERT_EQ(pods.size(), 4u);
  for (const auto& [name, pod] : pods) {
    EXPECT_FALSE(PodHasTlsDir(pod)) << name << ": the job's worker-0 serves plaintext";
  }
  AllRunning();
  SetRunning("digits-coordinator-0", "127.0.0.47");
  Reconcile();
  EXPECT_EQ(progress_.refreshed(), ns_ + "/digits 127.0.0.47:2222 token plaintext");

  auto patched = client_->MergePatch(*kube::Resource("trainingjobs", ns_, "digits"),
                                     {{"spec", {{"runPolicy", {{"suspend", true}}}}}});
  ASSERT_TRUE(patched.ok()) << patched.status();
  Reconcile();
  ASSERT_TRUE(Pods().empty());
  patched = client_->MergePatch(*kube::Resource("trainingjobs", ns_, "digits"),
                                {{"spec", {{"runPolicy", {{"suspend", false}}}}}});
  ASSERT_TRUE(patched.ok()) << patched.status();
  Reconcile();
  pods = Pods();
  ASSERT_EQ(pods.size(), 4u);
  for (const auto& [name, pod] : pods) EXPECT_TRUE(PodHasTlsDir(pod)) << name;
  EXPECT_EQ(SecretValue("ca.crt"), ca) << "upgraded once: the CA stays";
}

// A view whose Secret is an old copy: the cache of an operator lagging its own patch.
class StaleSecretView : public DirectClusterView {
 public:
  StaleSecretView(kube::KubeClient& client, json stale)
      : DirectClusterView(client), stale_(std::make_shared<const json>(std::move(stale))) {}
  absl::StatusOr<ObjectPtr> Secret(const std::string&, const std::string&) override {
    return stale_;
  }

 private:
  ObjectPtr stale_;
};

// The upgrade patch is made on the Secret as read (its resourceVersion): a reconcile that reads a
// copy from before an earlier upgrade is refused (Conflict) instead of giving the job a second CA.
TEST_F(ReconcilerIntegrationTest, AStaleReadOfTheSecretNeverMakesASecondCa) {
  CreateJob();
  const v1alpha1::TrainingJob job = v1alpha1::DecodeTrainingJob(Job()).job;
  json old_secret = BuildJobTokenSecret(job, "older-operators-secret", json::object());
  auto created = client_->Create(*kube::Resource("secrets", ns_), old_secret);
  ASSERT_TRUE(created.ok()) << created.status();
  Reconcile();
  const std::string ca = SecretValue("ca.crt");
  ASSERT_FALSE(ca.empty());

  StaleSecretView stale(*client_, *created);
  Reconciler lagging(stale, *client_, notifier_, events_, {});
  const ReconcileResult result = lagging.Reconcile(ns_ + "/digits");
  EXPECT_EQ(result.status.code(), absl::StatusCode::kAborted) << result.status;
  EXPECT_EQ(SecretValue("ca.crt"), ca);
}

TEST_F(ReconcilerIntegrationTest, SuspendDeletesThePodsAndResumeRecreatesThem) {
  CreateJob();
  Reconcile();
  AllRunning();
  Reconcile();
  auto patched = client_->MergePatch(*kube::Resource("trainingjobs", ns_, "digits"),
                                     {{"spec", {{"runPolicy", {{"suspend", true}}}}}});
  ASSERT_TRUE(patched.ok()) << patched.status();
  Reconcile();
  EXPECT_EQ(State(), "Suspended");
  EXPECT_TRUE(Pods().empty());
  patched = client_->MergePatch(*kube::Resource("trainingjobs", ns_, "digits"),
                                {{"spec", {{"runPolicy", {{"suspend", false}}}}}});
  ASSERT_TRUE(patched.ok()) << patched.status();
  Reconcile();
  EXPECT_EQ(Pods().size(), 4u);
  AllRunning();
  Reconcile();
  EXPECT_EQ(State(), "Running");
  for (const json& c : Conditions()) {
    if (c["type"] == "Suspended") {
      EXPECT_EQ(c["status"], "False");
    }
  }
}

TEST_F(ReconcilerIntegrationTest, ActiveDeadlineRequeuesAtTheDeadlineAndFails) {
  CreateJob(6, "activeDeadlineSeconds: 600");
  ReconcileResult first = Reconcile();
  ASSERT_TRUE(first.requeue_after.has_value()) << "the deadline must bring the job back by itself";
  EXPECT_LE(*first.requeue_after, absl::Seconds(600));
  EXPECT_GT(*first.requeue_after, absl::Seconds(590));
  AllRunning();
  now_ += absl::Seconds(601);
  Reconcile();
  EXPECT_EQ(State(), "Failed");
  bool deadline = false;
  for (const json& c : Conditions()) {
    deadline |= c["type"] == "Failed" && c["reason"] == "DeadlineExceeded";
  }
  EXPECT_TRUE(deadline);
  EXPECT_TRUE(Pods().empty() || !Pods().contains("digits-ps-0"));
}

TEST_F(ReconcilerIntegrationTest, TtlDeletesTheFinishedJob) {
  CreateJob(6, "ttlSecondsAfterFinished: 60");
  Reconcile();
  AllRunning();
  Reconcile();
  SetExited("digits-coordinator-0", 0);
  Reconcile();
  ASSERT_EQ(State(), "Succeeded");
  ReconcileResult waiting = Reconcile();
  ASSERT_TRUE(waiting.requeue_after.has_value());
  EXPECT_GT(*waiting.requeue_after, absl::Seconds(50));
  now_ += absl::Seconds(61);
  Reconcile();
  auto gone = client_->Get(*kube::Resource("trainingjobs", ns_, "digits"));
  EXPECT_TRUE(absl::IsNotFound(gone.status()) ||
              (gone.ok() && (*gone)["metadata"].contains("deletionTimestamp")))
      << gone.status();
}

TEST_F(ReconcilerIntegrationTest, ScaleDownDrainsAndRemovesTheHighestWorker) {
  CreateJob();
  Reconcile();
  AllRunning();
  SetRunning("digits-coordinator-0", "127.0.0.45");
  Reconcile();
  bool ok = false;
  const std::string scaled =
      Kubectl(absl::StrCat("-n ", ns_, " scale tj/digits --replicas=1"), &ok);
  ASSERT_TRUE(ok) << scaled;
  Reconcile();
  EXPECT_FALSE(Pods().contains("digits-worker-1"));
  EXPECT_TRUE(Pods().contains("digits-worker-0"));
  EXPECT_TRUE(absl::IsNotFound(
      client_->Get(*kube::Resource("services", ns_, "digits-worker-1")).status()));
  bool drained = false;
  for (const PreemptionNotice& n : notifier_.notices()) {
    drained |= n.task_type == "worker" && n.task_index == 1 && n.reason == "ScaleDown";
  }
  EXPECT_TRUE(drained) << "the coordinator hears of the scale-down before the pod goes";
}

// Gang scheduling. The PodGroup CRDs are the projects' own (testdata/, copied from their Go
// modules); nothing schedules here, so what is checked is what the operator writes: the PodGroup
// before the pods, its fields, its owner, and what happens without the CRD.
constexpr char kVolcanoCrd[] = "podgroups.scheduling.volcano.sh";
constexpr char kPluginsCrd[] = "podgroups.scheduling.x-k8s.io";

std::string CrdFile(const std::string& crd) {
  const std::string group = crd.substr(crd.find('.') + 1);
  return std::string(TJ_SOURCE_DIR) + "/tests/operator/controller/testdata/" + group +
         "_podgroups.yaml";
}

// Whether the API server serves the scheduler's podgroups in `ns` (a CRD being removed is still
// served for a moment after its object is gone).
bool Serves(kube::KubeClient& client, GangScheduler scheduler, const std::string& ns) {
  auto list = client.List(PodGroupResource(scheduler, ns), {});
  EXPECT_TRUE(list.ok() || absl::IsNotFound(list.status())) << list.status();
  return list.ok();
}

class GangSchedulingIntegrationTest : public ReconcilerIntegrationTest {
 protected:
  void InstallCrd(const std::string& crd, GangScheduler scheduler) {
    bool ok = false;
    const std::string applied = Kubectl("apply -f " + Quote(CrdFile(crd)), &ok);
    ASSERT_TRUE(ok) << applied;
    ASSERT_TRUE(testing::WaitFor([&] { return Serves(*client_, scheduler, ns_); }))
        << crd << " was never served";
  }
  void RemoveCrd(const std::string& crd, GangScheduler scheduler) {
    bool ok = false;
    const std::string deleted = Kubectl("delete crd --ignore-not-found --wait " + crd, &ok);
    ASSERT_TRUE(ok) << deleted;
    ASSERT_TRUE(testing::WaitFor([&] { return !Serves(*client_, scheduler, ns_); }))
        << crd << " is still served";
  }
  absl::StatusOr<json> PodGroup(GangScheduler scheduler, const std::string& name = "digits") {
    return client_->Get(PodGroupResource(scheduler, ns_, name));
  }
  std::map<std::string, json> PodsOf(const std::string& job) {
    std::map<std::string, json> out;
    for (auto& [name, pod] : Pods()) {
      if (name.starts_with(job + "-")) out[name] = pod;
    }
    return out;
  }
  json CreatedCondition(const std::string& job = "digits") {
    for (const json& c : Conditions(job)) {
      if (c["type"] == "Created") return c;
    }
    return json();
  }
  int EventCount(const std::string& text) {
    int n = 0;
    for (const std::string& e : events_.events()) n += e.find(text) != std::string::npos;
    return n;
  }
};

TEST_F(GangSchedulingIntegrationTest, VolcanoPodGroupCarriesThePolicyFollowsItAndGoesWithTheJob) {
  InstallCrd(kVolcanoCrd, GangScheduler::kVolcano);
  // Pods naming a PriorityClass are admitted only when it exists.
  Kubectl("create priorityclass tj-test-high --value=1000");
  ASSERT_THAT(Kubectl("get priorityclass tj-test-high -o name"), HasSubstr("priorityclass"));
  UseGangScheduler(GangScheduler::kVolcano);
  CreateJob(6, "schedulingPolicy: {minAvailable: 3, queue: research, priorityClass: tj-test-high}");
  Reconcile();

  auto group = PodGroup(GangScheduler::kVolcano);
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_EQ((*group)["apiVersion"], "scheduling.volcano.sh/v1beta1");
  EXPECT_EQ((*group)["spec"]["minMember"], 3);
  EXPECT_EQ((*group)["spec"]["queue"], "research");
  EXPECT_EQ((*group)["spec"]["priorityClassName"], "tj-test-high");
  EXPECT_FALSE((*group)["spec"].contains("minResources"));
  EXPECT_EQ((*group)["metadata"]["labels"]["trainingjob.dev/job-name"], "digits");
  const json job = Job();
  ASSERT_EQ((*group)["metadata"]["ownerReferences"].size(), 1u);
  const json& owner = (*group)["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["uid"], job["metadata"]["uid"]);
  EXPECT_EQ(owner["kind"], "TrainingJob");
  EXPECT_EQ(owner["apiVersion"], "trainingjob.dev/v1alpha1");
  EXPECT_EQ(owner["controller"], true);
  EXPECT_TRUE(events_.Has("Normal CreatedPodGroup: created PodGroup " + ns_ + "/digits"));

  // The pods name it the way Volcano reads it.
  const std::map<std::string, json> pods = Pods();
  ASSERT_EQ(pods.size(), 4u);
  for (const auto& [name, pod] : pods) {
    EXPECT_EQ(pod["spec"]["schedulerName"], "volcano") << name;
    EXPECT_EQ(pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"], "digits") << name;
    EXPECT_EQ(pod["metadata"]["annotations"]["volcano.sh/queue-name"], "research") << name;
    EXPECT_EQ(pod["spec"]["priorityClassName"], "tj-test-high") << name;
  }
  json created = CreatedCondition();
  EXPECT_EQ(created["status"], "True");

  // Level-based: the job's policy edited, the PodGroup follows; Volcano's own fields stay.
  auto foreign = client_->MergePatch(PodGroupResource(GangScheduler::kVolcano, ns_, "digits"),
                                     {{"spec", {{"minTaskMember", {{"worker", 1}}}}}});
  ASSERT_TRUE(foreign.ok()) << foreign.status();
  auto patched = client_->MergePatch(
      *kube::Resource("trainingjobs", ns_, "digits"),
      {{"spec",
        {{"runPolicy", {{"schedulingPolicy", {{"minAvailable", 4}, {"queue", "batch"}}}}}}}});
  ASSERT_TRUE(patched.ok()) << patched.status();
  Reconcile();
  group = PodGroup(GangScheduler::kVolcano);
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_EQ((*group)["spec"]["minMember"], 4);
  EXPECT_EQ((*group)["spec"]["queue"], "batch");
  EXPECT_EQ((*group)["spec"]["priorityClassName"], "tj-test-high");
  EXPECT_EQ((*group)["spec"]["minTaskMember"]["worker"], 1) << "a field the job does not set";
  EXPECT_TRUE(events_.Has("Normal UpdatedPodGroup"));
  const std::string version = (*group)["metadata"]["resourceVersion"];
  Reconcile();
  EXPECT_EQ((*PodGroup(GangScheduler::kVolcano))["metadata"]["resourceVersion"], version)
      << "an unchanged job writes nothing";

  // Deleted behind the operator's back while a pod must be created: made again first.
  ASSERT_TRUE(client_->Delete(PodGroupResource(GangScheduler::kVolcano, ns_, "digits"), {}).ok());
  ASSERT_TRUE(client_->Delete(*kube::Resource("pods", ns_, "digits-worker-1"), {}).ok());
  ASSERT_TRUE(testing::WaitFor([&] { return !Pods().contains("digits-worker-1"); }));
  Reconcile();
  EXPECT_TRUE(PodGroup(GangScheduler::kVolcano).ok());
  EXPECT_TRUE(Pods().contains("digits-worker-1"));

  // The garbage collector deletes it with the job (ownerReference; no delete by the operator).
  kube::DeleteOptions background;
  background.propagation_policy = "Background";
  ASSERT_TRUE(client_->Delete(*kube::Resource("trainingjobs", ns_, "digits"), background).ok());
  EXPECT_TRUE(
      testing::WaitFor([&] { return absl::IsNotFound(PodGroup(GangScheduler::kVolcano).status()); },
                       absl::Seconds(120)))
      << "the PodGroup outlived its job";
}

TEST_F(GangSchedulingIntegrationTest, SchedulerPluginsPodGroupHoldsTheWholeJobAndFollowsScaling) {
  InstallCrd(kPluginsCrd, GangScheduler::kSchedulerPlugins);
  UseGangScheduler(GangScheduler::kSchedulerPlugins);
  CreateJob(6, "schedulingPolicy: {queue: ignored-by-the-coscheduler}");
  Reconcile();
  auto group = PodGroup(GangScheduler::kSchedulerPlugins);
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_EQ((*group)["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
  EXPECT_EQ((*group)["spec"], json({{"minMember", 4}})) << "minAvailable unset: every replica";
  EXPECT_EQ((*group)["metadata"]["ownerReferences"][0]["uid"], Job()["metadata"]["uid"]);
  EXPECT_EQ((*group)["metadata"]["ownerReferences"][0]["controller"], true);
  const std::map<std::string, json> pods = Pods();
  ASSERT_EQ(pods.size(), 4u);
  for (const auto& [name, pod] : pods) {
    EXPECT_EQ(pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"], "digits") << name;
    EXPECT_EQ(pod["spec"]["schedulerName"], "scheduler-plugins-scheduler") << name;
  }

  // Elastic workers: the whole job is now 5 replicas, and so is the gang.
  bool ok = false;
  const std::string scaled =
      Kubectl(absl::StrCat("-n ", ns_, " scale tj/digits --replicas=3"), &ok);
  ASSERT_TRUE(ok) << scaled;
  Reconcile();
  group = PodGroup(GangScheduler::kSchedulerPlugins);
  ASSERT_TRUE(group.ok()) << group.status();
  EXPECT_EQ((*group)["spec"]["minMember"], 5);
  EXPECT_TRUE(Pods().contains("digits-worker-2"));
}

TEST_F(GangSchedulingIntegrationTest, MissingPodGroupCrdWarnsHoldsThePodsAndServesOtherJobs) {
  RemoveCrd(kVolcanoCrd, GangScheduler::kVolcano);
  // A job already running (its pods made before the flag was set) and a new one.
  CreateJob(6, "", "other");
  Reconcile("other");
  for (const auto& [name, pod] : PodsOf("other")) SetRunning(name);
  Reconcile("other");
  ASSERT_EQ(State("other"), "Running");
  UseGangScheduler(GangScheduler::kVolcano);
  CreateJob();

  const ReconcileResult blocked = Reconcile();  // OK: not an error to back off and retry
  ASSERT_TRUE(blocked.requeue_after.has_value()) << "nothing else would bring the job back";
  EXPECT_EQ(*blocked.requeue_after, absl::Minutes(1));
  EXPECT_TRUE(PodsOf("digits").empty()) << "pods without their PodGroup would never schedule";
  const json created = CreatedCondition();
  EXPECT_EQ(created["status"], "False");
  EXPECT_EQ(created["reason"], "PodGroupUnavailable");
  EXPECT_THAT(created["message"].get<std::string>(),
              HasSubstr("podgroups.scheduling.volcano.sh is not installed"));
  EXPECT_THAT(created["message"].get<std::string>(), HasSubstr("--gang-scheduler=volcano"));
  EXPECT_TRUE(
      events_.Has("Warning PodGroupUnavailable: podgroups.scheduling.volcano.sh is not "
                  "installed"));
  EXPECT_TRUE(client_->Get(*kube::Resource("services", ns_, "digits-ps-0")).ok())
      << "the rest of the job is made";
  Reconcile();
  EXPECT_EQ(EventCount("Warning PodGroupUnavailable"), 1) << "one Warning, not one a minute";

  // The other job goes on: it finishes and is cleaned up.
  SetExited("other-coordinator-0", 0);
  Reconcile("other");
  EXPECT_EQ(State("other"), "Succeeded");
  EXPECT_FALSE(PodsOf("other").contains("other-ps-0"));

  // Installed: the next reconcile makes the PodGroup, then the pods.
  InstallCrd(kVolcanoCrd, GangScheduler::kVolcano);
  const ReconcileResult unblocked = Reconcile();
  EXPECT_FALSE(unblocked.requeue_after.has_value());
  EXPECT_TRUE(PodGroup(GangScheduler::kVolcano).ok());
  EXPECT_EQ(PodsOf("digits").size(), 4u);
  EXPECT_EQ(CreatedCondition()["status"], "True");
  EXPECT_EQ(State(), "Created");
}


// spec.checkpoint.volume (reconciler_checkpoint_volume.cc): the claim before the pods, mounted on
// the coordinator and PS only; a claim that cannot serve holds the job; the garbage collector
// takes a claim the operator made only under reclaimPolicy Delete.
class CheckpointVolumeIntegrationTest : public ReconcilerIntegrationTest {
 protected:
  void CreateJobWithVolume(const std::string& name, const std::string& volume_yaml) {
    std::string yaml = absl::StrReplaceAll(
        kJobYaml, {{"BACKOFF", "6"}, {"EXTRA_RUN_POLICY", ""}, {"name: digits", "name: " + name}});
    absl::StrAppend(&yaml, "  checkpoint:\n    dir: /checkpoints/", name, "\n    volume: ",
                    volume_yaml, "\n");
    auto manifest = v1alpha1::YamlToJson(yaml, "job.yaml");
    ASSERT_TRUE(manifest.ok()) << manifest.status();
    auto created = client_->Create(*kube::Resource("trainingjobs", ns_), *manifest);
    ASSERT_TRUE(created.ok()) << created.status();
  }
  void CreateClaim(const std::string& name, const std::string& access_mode) {
    const json claim = {
        {"metadata", {{"name", name}}},
        {"spec",
         {{"accessModes", json::array({access_mode})},
          {"storageClassName", ""},
          {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
    auto created = client_->Create(*kube::Resource("persistentvolumeclaims", ns_), claim);
    ASSERT_TRUE(created.ok()) << created.status();
  }
  absl::StatusOr<json> Claim(const std::string& name) {
    return client_->Get(*kube::Resource("persistentvolumeclaims", ns_, name));
  }
  json CreatedCondition(const std::string& job) {
    for (const json& c : Conditions(job)) {
      if (c["type"] == "Created") return c;
    }
    return json::object();
  }
  static std::string ClaimOf(const json& pod) {
    for (const json& volume : pod["spec"].value("volumes", json::array())) {
      if (volume.contains("persistentVolumeClaim")) {
        return volume["persistentVolumeClaim"]["claimName"];
      }
    }
    return "";
  }
};

TEST_F(CheckpointVolumeIntegrationTest, ClaimFromTemplateIsMadeBeforeThePodsAndMountedOnCoordinatorAndPs) {
  CreateJobWithVolume("digits", "{claimTemplate: {resources: {requests: {storage: 2Gi}}}}");
  Reconcile();
  absl::StatusOr<json> claim = Claim("digits-checkpoint");
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_EQ((*claim)["spec"]["accessModes"], json::array({"ReadWriteMany"}));
  EXPECT_EQ((*claim)["spec"]["resources"]["requests"]["storage"], "2Gi");
  EXPECT_EQ((*claim)["metadata"]["labels"]["trainingjob.dev/job-name"], "digits");
  EXPECT_FALSE((*claim)["metadata"].contains("ownerReferences")) << "Retain by default";
  EXPECT_TRUE(events_.Has("Normal CreatedCheckpointClaim: created PersistentVolumeClaim " + ns_ +
                          "/digits-checkpoint (reclaimPolicy Retain)"))
      << ::testing::PrintToString(events_.events());

  const std::map<std::string, json> pods = Pods();
  ASSERT_EQ(pods.size(), 4u);
  for (const char* name : {"digits-coordinator-0", "digits-ps-0"}) {
    const json& pod = pods.at(name);
    EXPECT_EQ(ClaimOf(pod), "digits-checkpoint") << name;
    EXPECT_EQ(pod["spec"]["securityContext"]["fsGroup"], 65532) << name;
    bool mounted = false;
    for (const json& mount : pod["spec"]["containers"][0]["volumeMounts"]) {
      mounted |= mount["mountPath"] == "/checkpoints/digits";
    }
    EXPECT_TRUE(mounted) << name;
  }
  EXPECT_EQ(ClaimOf(pods.at("digits-worker-0")), "");
  EXPECT_EQ(CreatedCondition("digits")["status"], "True");
}

TEST_F(CheckpointVolumeIntegrationTest, AMissingClaimHoldsTheJobUntilItExists) {
  CreateJobWithVolume("digits", "{claimName: team-checkpoints}");
  ReconcileResult held = Reconcile();
  EXPECT_TRUE(Pods().empty()) << "no pod, so no checkpoint half-written";
  const json created = CreatedCondition("digits");
  EXPECT_EQ(created["status"], "False");
  EXPECT_EQ(created["reason"], "CheckpointVolumeUnavailable");
  EXPECT_THAT(created["message"].get<std::string>(),
              HasSubstr("PersistentVolumeClaim " + ns_ + "/team-checkpoints"));
  EXPECT_THAT(created["message"].get<std::string>(), HasSubstr("does not exist"));
  ASSERT_TRUE(held.requeue_after.has_value()) << "claims are not watched: the job comes back";
  EXPECT_LE(*held.requeue_after, absl::Seconds(30));
  EXPECT_TRUE(events_.Has("Warning CheckpointVolumeUnavailable: PersistentVolumeClaim " + ns_ +
                          "/team-checkpoints"))
      << ::testing::PrintToString(events_.events());

  // Held, not failed, and not a Warning per reconcile.
  const size_t events = events_.events().size();
  Reconcile();
  EXPECT_TRUE(Pods().empty());
  EXPECT_EQ(events_.events().size(), events) << ::testing::PrintToString(events_.events());
  EXPECT_NE(State("digits"), "Failed");

  CreateClaim("team-checkpoints", "ReadWriteMany");
  Reconcile();
  const std::map<std::string, json> pods = Pods();
  ASSERT_EQ(pods.size(), 4u);
  EXPECT_EQ(ClaimOf(pods.at("digits-ps-0")), "team-checkpoints");
  EXPECT_EQ(CreatedCondition("digits")["status"], "True");
}

TEST_F(CheckpointVolumeIntegrationTest, AReadWriteOnceClaimIsRefusedNamingTheClaim) {
  CreateClaim("single-node", "ReadWriteOnce");
  CreateJobWithVolume("digits", "{claimName: single-node}");
  Reconcile();
  EXPECT_TRUE(Pods().empty());
  const json created = CreatedCondition("digits");
  EXPECT_EQ(created["reason"], "CheckpointVolumeUnavailable");
  EXPECT_THAT(created["message"].get<std::string>(),
              HasSubstr("PersistentVolumeClaim " + ns_ +
                        "/single-node has access modes [ReadWriteOnce], not ReadWriteMany"));
  // Another job's template claim of the same name is not taken over either.
  CreateClaim("other-checkpoint", "ReadWriteMany");
  CreateJobWithVolume("other", "{claimTemplate: {resources: {requests: {storage: 1Gi}}}}");
  Reconcile("other");
  EXPECT_THAT(CreatedCondition("other")["message"].get<std::string>(),
              HasSubstr("was not made for this TrainingJob"));
}

TEST_F(CheckpointVolumeIntegrationTest, DeleteGoesWithTheJobRetainOutlivesIt) {
  CreateJobWithVolume("gone",
                      "{claimTemplate: {resources: {requests: {storage: 1Gi}}}, "
                      "reclaimPolicy: Delete}");
  CreateJobWithVolume("kept", "{claimTemplate: {resources: {requests: {storage: 1Gi}}}}");
  Reconcile("gone");
  Reconcile("kept");
  absl::StatusOr<json> owned = Claim("gone-checkpoint");
  ASSERT_TRUE(owned.ok()) << owned.status();
  EXPECT_TRUE(ControlledBy(*owned, Job("gone")["metadata"]["uid"]));
  ASSERT_TRUE(Claim("kept-checkpoint").ok());

  for (const char* job : {"gone", "kept"}) {
    kube::DeleteOptions options;
    options.propagation_policy = "Background";
    auto deleted = client_->Delete(*kube::Resource("trainingjobs", ns_, job), options);
    ASSERT_TRUE(deleted.ok()) << deleted.status();
  }
  // The garbage collector deletes the owned claim (and the pvc-protection controller lets it go
  // once the pods that mount it are gone).
  EXPECT_TRUE(testing::WaitFor(
      [&] { return absl::IsNotFound(Claim("gone-checkpoint").status()); }, absl::Seconds(120)))
      << "the claim of a reclaimPolicy Delete job outlived it";
  EXPECT_TRUE(testing::WaitFor([&] {
    return absl::IsNotFound(client_->Get(*kube::Resource("trainingjobs", ns_, "kept")).status());
  }, absl::Seconds(120)));
  absl::StatusOr<json> kept = Claim("kept-checkpoint");
  ASSERT_TRUE(kept.ok()) << "Retain: the checkpoints outlive the job";
  EXPECT_FALSE((*kept)["metadata"].contains("deletionTimestamp"));

  // A job of the same name made again finds its checkpoints: the retained claim is used (once
  // the old job's Secret has gone the same way as the job).
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        return absl::IsNotFound(
            client_->Get(*kube::Resource("secrets", ns_, "kept-job-token")).status());
      },
      absl::Seconds(120)));
  CreateJobWithVolume("kept", "{claimTemplate: {resources: {requests: {storage: 1Gi}}}}");
  Reconcile("kept");
  EXPECT_EQ(CreatedCondition("kept")["status"], "True");
  EXPECT_EQ(ClaimOf(Pods().at("kept-ps-0")), "kept-checkpoint");
}


// spec.checkpoint.s3 (reconciler_checkpoint_storage.cc) against a real S3-compatible server
// (SeaweedFS, tests/support/s3_test_server.h, started once for these cases): the credentials
// Secret read by name and the bucket asked with them before the coordinator and PS pods; a
// missing Secret or key, a missing bucket, refused credentials and a silent endpoint each hold
// the job naming what is wrong; a good one gets pods whose env takes the keys from the Secret.
class CheckpointStorageIntegrationTest : public CheckpointVolumeIntegrationTest {
 protected:
  static void SetUpTestSuite() {
    ReconcilerIntegrationTest::SetUpTestSuite();
    if (!KubeClusterEnvironment::skip_reason().empty() || server_ != nullptr) return;
    absl::StatusOr<std::string> weed = testing::FindOrBuildWeed(&s3_skip_reason_);
    ASSERT_TRUE(weed.ok()) << weed.status();
    if (weed->empty()) return;
    absl::StatusOr<std::unique_ptr<testing::S3TestServer>> server =
        testing::S3TestServer::Start(*weed);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = server->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    CheckpointVolumeIntegrationTest::SetUp();
    if (IsSkipped()) return;
    if (server_ == nullptr) GTEST_SKIP() << s3_skip_reason_;
  }

  void CreateJobWithBucket(const std::string& dir, const std::string& endpoint,
                           const std::string& name = "digits") {
    std::string yaml = absl::StrReplaceAll(
        kJobYaml, {{"BACKOFF", "6"}, {"EXTRA_RUN_POLICY", ""}, {"name: digits", "name: " + name}});
    absl::StrAppend(&yaml, "  checkpoint:\n    dir: ", dir, "\n    s3:\n      endpoint: ",
                    endpoint, "\n      credentialsSecret: {name: ckpt-s3}\n");
    auto manifest = v1alpha1::YamlToJson(yaml, "job.yaml");
    ASSERT_TRUE(manifest.ok()) << manifest.status();
    auto created = client_->Create(*kube::Resource("trainingjobs", ns_), *manifest);
    ASSERT_TRUE(created.ok()) << created.status();
  }
  void CreateCredentials(const std::map<std::string, std::string>& values) {
    json data = json::object();
    for (const auto& [key, value] : values) data[key] = absl::Base64Escape(value);
    auto created = client_->Create(*kube::Resource("secrets", ns_),
                                   {{"metadata", {{"name", "ckpt-s3"}}}, {"data", data}});
    ASSERT_TRUE(created.ok()) << created.status();
  }
  void CreateGoodCredentials() {
    CreateCredentials({{"AWS_ACCESS_KEY_ID", testing::kS3TestAccessKey},
                       {"AWS_SECRET_ACCESS_KEY", testing::kS3TestSecretKey}});
  }
  // Held: no pod, Created False with the reason and `text` in its message, one Warning Event
  // with `text`, back within 30 s, and not failed.
  void ExpectHeld(const ReconcileResult& held, const std::string& text) {
    EXPECT_TRUE(Pods().empty()) << "no pod, so no checkpoint half-written";
    const json created = CreatedCondition("digits");
    EXPECT_EQ(created["status"], "False");
    EXPECT_EQ(created["reason"], "CheckpointStorageUnavailable");
    EXPECT_THAT(created.value("message", ""), HasSubstr(text));
    ASSERT_TRUE(held.requeue_after.has_value()) << "Secrets and buckets are not watched";
    EXPECT_LE(*held.requeue_after, absl::Seconds(30));
    EXPECT_TRUE(events_.Has("Warning CheckpointStorageUnavailable: "))
        << ::testing::PrintToString(events_.events());
    EXPECT_TRUE(events_.Has(text)) << ::testing::PrintToString(events_.events());
    EXPECT_NE(State("digits"), "Failed");
  }
  static std::vector<json> EnvNamed(const json& pod, const std::string& name) {
    std::vector<json> out;
    for (const json& var : pod["spec"]["containers"][0].value("env", json::array())) {
      if (var.value("name", "") == name) out.push_back(var);
    }
    return out;
  }

  static testing::S3TestServer* server_;
  static std::string s3_skip_reason_;
};
testing::S3TestServer* CheckpointStorageIntegrationTest::server_ = nullptr;
std::string CheckpointStorageIntegrationTest::s3_skip_reason_;

TEST_F(CheckpointStorageIntegrationTest, AGoodBucketGetsPodsThatTakeTheKeysFromTheSecret) {
  CreateGoodCredentials();
  CreateJobWithBucket("s3://tj-ckpt/digits", server_->endpoint());
  Reconcile();
  const std::map<std::string, json> pods = Pods();
  ASSERT_EQ(pods.size(), 4u) << ::testing::PrintToString(Conditions());
  EXPECT_EQ(CreatedCondition("digits")["status"], "True");
  for (const char* name : {"digits-coordinator-0", "digits-ps-0"}) {
    const json& pod = pods.at(name);
    EXPECT_EQ(EnvNamed(pod, "TJ_CHECKPOINT_DIR").at(0)["value"], "s3://tj-ckpt/digits") << name;
    EXPECT_EQ(EnvNamed(pod, "TJ_S3_ENDPOINT").at(0)["value"], server_->endpoint()) << name;
    EXPECT_EQ(EnvNamed(pod, "TJ_S3_CREDENTIALS_SECRET").at(0)["value"], ns_ + "/ckpt-s3");
    EXPECT_EQ(EnvNamed(pod, "AWS_SECRET_ACCESS_KEY").at(0)["valueFrom"],
              (json{{"secretKeyRef", {{"name", "ckpt-s3"}, {"key", "AWS_SECRET_ACCESS_KEY"}}}}));
    // The values themselves are nowhere in the pod.
    EXPECT_EQ(pod.dump().find(testing::kS3TestSecretKey), std::string::npos) << name;
    EXPECT_EQ(pod.dump().find(testing::kS3TestAccessKey), std::string::npos) << name;
  }
  EXPECT_TRUE(EnvNamed(pods.at("digits-worker-0"), "AWS_ACCESS_KEY_ID").empty());
  EXPECT_FALSE(events_.Has("CheckpointStorageUnavailable"));
}

TEST_F(CheckpointStorageIntegrationTest, AMissingSecretHoldsTheJobUntilItExists) {
  CreateJobWithBucket("s3://tj-ckpt/digits", server_->endpoint());
  ExpectHeld(Reconcile(), "Secret " + ns_ + "/ckpt-s3 (spec.checkpoint.s3.credentialsSecret.name) "
                          "does not exist");
  // Held, not failed, and not a Warning per reconcile.
  const size_t events = events_.events().size();
  Reconcile();
  EXPECT_TRUE(Pods().empty());
  EXPECT_EQ(events_.events().size(), events) << ::testing::PrintToString(events_.events());

  CreateGoodCredentials();
  Reconcile();
  EXPECT_EQ(Pods().size(), 4u);
  EXPECT_EQ(CreatedCondition("digits")["status"], "True");
}

TEST_F(CheckpointStorageIntegrationTest, ASecretWithoutTheKeyIsNamed) {
  CreateCredentials({{"AWS_ACCESS_KEY_ID", testing::kS3TestAccessKey},
                     {"secret-key", testing::kS3TestSecretKey}});
  CreateJobWithBucket("s3://tj-ckpt/digits", server_->endpoint());
  ExpectHeld(Reconcile(), "Secret " + ns_ + "/ckpt-s3 has no key AWS_SECRET_ACCESS_KEY "
                          "(spec.checkpoint.s3.credentialsSecret.secretAccessKeyKey)");
}

TEST_F(CheckpointStorageIntegrationTest, AMissingBucketIsNamed) {
  CreateGoodCredentials();
  CreateJobWithBucket("s3://no-such-bucket/digits", server_->endpoint());
  ExpectHeld(Reconcile(), "bucket no-such-bucket does not exist at " + server_->endpoint());
}

TEST_F(CheckpointStorageIntegrationTest, RefusedCredentialsAreNamedWithTheirSecret) {
  CreateCredentials({{"AWS_ACCESS_KEY_ID", testing::kS3TestAccessKey},
                     {"AWS_SECRET_ACCESS_KEY", "not-the-secret-key"}});
  CreateJobWithBucket("s3://tj-ckpt/digits", server_->endpoint());
  // The access key ID masked (job readers may not read Secrets), the secret key never shown.
  const std::string id(testing::kS3TestAccessKey);
  ExpectHeld(Reconcile(), "credentials from Secret " + ns_ + "/ckpt-s3 (access key ****" +
                              id.substr(id.size() - 4) + ") refused for bucket tj-ckpt");
  EXPECT_FALSE(events_.Has(id)) << ::testing::PrintToString(events_.events());
  EXPECT_THAT(CreatedCondition("digits").dump(), ::testing::Not(HasSubstr(id)));
  EXPECT_FALSE(events_.Has("not-the-secret-key")) << "the secret key is never in a message";
}

TEST_F(CheckpointStorageIntegrationTest, AnEndpointThatDoesNotAnswerHoldsTheJob) {
  CreateGoodCredentials();
  // A port nothing listens on: the connection is refused at once.
  CreateJobWithBucket("s3://tj-ckpt/digits", "http://127.0.0.1:9");
  ExpectHeld(Reconcile(), "s3://tj-ckpt at http://127.0.0.1:9");
}

}  // namespace
}  // namespace tj::op

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new tj::kube::testing::KubeClusterEnvironment);
  return RUN_ALL_TESTS();
}
