// The Reconciler against a real kube-apiserver (tests/kube-test-cluster/) with the real CRD
// (crds/), fixture in reconciler_integration_fixture.h: the test plays the kubelet, writing pod
// status through the pods/status subresource (Running, exit codes, DisruptionTarget), and checks
// what the operator does about it: pods,
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

#include "api/v1alpha1/decode.h"
#include "coordinator/base/job_certificates.h"
#include "coordinator/base/job_roles.h"
#include "operator/controller/replica_objects.h"
#include "operator/controller/write_executor.h"
#include "tests/operator/controller/reconciler_integration_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::HasSubstr;

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

// spec.managedBy naming MultiKueue: the API server keeps the job as created, the Reconciler
// creates nothing and writes no status, and the field cannot be changed to hand the job back.
TEST_F(ReconcilerIntegrationTest, AJobManagedByMultiKueueIsLeftAloneAndStaysSo) {
  std::string yaml = absl::StrReplaceAll(
      kJobYaml, {{"BACKOFF", "6"}, {"EXTRA_RUN_POLICY", ""}, {"SCHEDULER", scheduler_name_}});
  auto manifest = v1alpha1::YamlToJson(yaml, "job.yaml");
  ASSERT_TRUE(manifest.ok()) << manifest.status();
  (*manifest)["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue";
  auto created = client_->Create(*kube::Resource("trainingjobs", ns_), *manifest);
  ASSERT_TRUE(created.ok()) << created.status();
  const ReconcileResult result = Reconcile();
  EXPECT_FALSE(result.requeue_after.has_value());
  EXPECT_TRUE(Pods().empty());
  auto services = client_->List(*kube::Resource("services", ns_), {});
  ASSERT_TRUE(services.ok()) << services.status();
  EXPECT_TRUE((*services)["items"].empty());
  EXPECT_TRUE(absl::IsNotFound(
      client_->Get(*kube::Resource("secrets", ns_, "digits-job-token")).status()));
  EXPECT_FALSE(Job().contains("status")) << Job().dump();

  auto handed_back = client_->MergePatch(*kube::Resource("trainingjobs", ns_, "digits"),
                                         {{"spec", {{"managedBy", "trainingjob.dev/tj-operator"}}}});
  ASSERT_FALSE(handed_back.ok());
  EXPECT_THAT(std::string(handed_back.status().message()),
              ::testing::HasSubstr("spec.managedBy: Invalid value"));
  EXPECT_EQ(Job()["spec"]["managedBy"], "kueue.x-k8s.io/multikueue");
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

}  // namespace
}  // namespace tj::op::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new tj::kube::testing::KubeClusterEnvironment);
  return RUN_ALL_TESTS();
}
