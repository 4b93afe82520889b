// Kueue admission against a real kube-apiserver and the real Kueue controller manager built from
// its Go module (tests/kube-test-cluster/kueue-up.sh: ClusterQueue `cluster-queue` with 4 CPUs,
// ResourceFlavor `default-flavor`, WorkloadPriorityClasses `low` and `high`; a LocalQueue
// `user-queue` per test namespace). The Reconciler runs with --kueue over DirectClusterView and
// the test plays the kubelet (reconciler_integration_fixture.h). Kueue decides: admission, a
// quota that holds a second job back until the first one's Workload is Finished, preemption of a
// lower-priority job (notice to its coordinator first, then its pods removed and its quota handed
// back) and its readmission once the higher one is done. Each job asks for 4 x 1 CPU, the whole
// quota. The checkpoint and the exact step count at the end are the e2e test's (real trainers).
#include <string>

#include "absl/strings/str_replace.h"
#include "operator/controller/kueue_workload.h"
#include "tests/operator/controller/kueue_env.h"
#include "tests/operator/controller/reconciler_integration_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::SizeIs;

constexpr char kQueuedJobYaml[] = R"(apiVersion: trainingjob.dev/v1alpha1
kind: TrainingJob
metadata:
  name: NAME
  labels: {kueue.x-k8s.io/queue-name: QUEUE PRIORITY}
spec:
  runPolicy: {backoffLimit: 3}
  replicaSpecs:
    Coordinator:
      template:
        spec:
          containers:
          - {name: trainer, image: "trainingjob/runtime:dev", command: [tj-train], resources: {requests: {cpu: "1"}}}
    PS:
      template:
        spec:
          containers:
          - {name: trainer, image: "trainingjob/runtime:dev", command: [tj-train], resources: {requests: {cpu: "1"}}}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - {name: trainer, image: "trainingjob/runtime:dev", command: [tj-train], resources: {requests: {cpu: "1"}}}
)";

constexpr absl::Duration kKueueTimeout = absl::Seconds(120);

class KueueIntegrationTest : public ReconcilerIntegrationTest {
 protected:
  void SetUp() override {
    ReconcilerIntegrationTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_TRUE(KueueEnvironment::up());
    ReconcilerOptions options;
    options.clock = [this] { return now_; };
    options.kueue.enabled = true;
    reconciler_ = std::make_unique<Reconciler>(*view_, *client_, notifier_, events_, options);
    bool ok = false;
    const std::string out = kube::testing::RunCommand(
        std::string(TJ_SOURCE_DIR) + "/tests/kube-test-cluster/kueue-local-queue.sh '" +
            KubeClusterEnvironment::workdir() + "' " + ns_ + " 2>&1",
        &ok);
    ASSERT_TRUE(ok) << out;
  }
  // The ClusterQueue is shared: a test's Workloads go with it.
  void TearDown() override {
    if (ns_.empty() || IsSkipped()) return;
    Kubectl("delete workloads --all --wait=true --timeout=60s -n " + ns_);
  }

  void CreateQueuedJob(const std::string& name, const std::string& queue = "user-queue",
                       const std::string& priority = "") {
    const std::string yaml = absl::StrReplaceAll(
        kQueuedJobYaml,
        {{"NAME", name},
         {"QUEUE", queue},
         {" PRIORITY", priority.empty() ? "" : ", kueue.x-k8s.io/priority-class: " + priority}});
    auto manifest = v1alpha1::YamlToJson(yaml, "job.yaml");
    ASSERT_TRUE(manifest.ok()) << manifest.status();
    auto created = client_->Create(*kube::Resource("trainingjobs", ns_), *manifest);
    ASSERT_TRUE(created.ok()) << created.status();
  }
  json Workload(const std::string& job) {
    auto w = client_->Get(KueueResource("workloads", ns_, "trainingjob-" + job));
    return w.ok() ? *w : json::object();
  }
  WorkloadState StateOf(const std::string& job) { return ReadWorkload(Workload(job)).state; }
  // The job's pods, by name.
  std::map<std::string, json> PodsOf(const std::string& job) {
    std::map<std::string, json> out;
    for (const auto& [name, pod] : Pods()) {
      if (name.starts_with(job + "-")) out[name] = pod;
    }
    return out;
  }
  // Reconciles the job until `done` holds (Kueue answers on its own time).
  bool ReconcileUntil(const std::string& job, const std::function<bool()>& done) {
    return WaitFor(
        [&] {
          reconciler_->Reconcile(ns_ + "/" + job);
          return done();
        },
        kKueueTimeout);
  }
  json Suspended(const std::string& job) {
    for (const json& c : Conditions(job)) {
      if (c["type"] == "Suspended") return c;
    }
    return json::object();
  }
  void RunToSuccess(const std::string& job) {
    for (const auto& [name, pod] : PodsOf(job)) SetRunning(name);
    SetExited(job + "-coordinator-0", 0);
    ASSERT_TRUE(ReconcileUntil(job, [&] { return StateOf(job) == WorkloadState::kFinished; }))
        << Workload(job).dump();
  }
};

TEST_F(KueueIntegrationTest, KueueAdmitsAWorkloadOfItsLocalQueue) {
  auto smoke = v1alpha1::YamlToJson(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: smoke}
spec:
  queueName: user-queue
  podSets:
  - name: main
    count: 1
    template:
      spec:
        restartPolicy: Never
        containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]
)",
                                    "smoke.yaml");
  ASSERT_TRUE(smoke.ok()) << smoke.status();
  auto created = client_->Create(KueueResource("workloads", ns_), *smoke);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(WaitFor(
      [&] {
        auto w = client_->Get(KueueResource("workloads", ns_, "smoke"));
        return w.ok() && ReadWorkload(*w).state == WorkloadState::kAdmitted;
      },
      kKueueTimeout));
  auto w = client_->Get(KueueResource("workloads", ns_, "smoke"));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(ReadWorkload(*w).flavors.size(), 0u) << "the PodSet is not one of a TrainingJob's";
  EXPECT_EQ((*w)["status"]["admission"]["podSetAssignments"][0]["flavors"]["cpu"],
            "default-flavor");
}

TEST_F(KueueIntegrationTest, AQueuedJobWaitsForAdmissionThenRunsOnTheAdmittedFlavour) {
  CreateQueuedJob("digits");
  Reconcile();
  const json workload = Workload("digits");
  ASSERT_TRUE(workload.contains("spec")) << "no Workload";
  EXPECT_EQ(workload["metadata"]["ownerReferences"][0]["kind"], "TrainingJob");
  ASSERT_THAT(workload["spec"]["podSets"], SizeIs(3));
  EXPECT_EQ(workload["spec"]["podSets"][2]["count"], 2);
  EXPECT_TRUE(PodsOf("digits").empty()) << "no pod before admission";
  EXPECT_EQ(Suspended("digits").value("reason", ""), "WaitingForAdmission");

  ASSERT_TRUE(ReconcileUntil("digits", [&] { return PodsOf("digits").size() == 4; }));
  for (const auto& [name, pod] : PodsOf("digits")) {
    EXPECT_EQ(pod["spec"]["nodeSelector"]["tj.dev/pool"], "kueue") << name;
    EXPECT_THAT(pod["spec"]["tolerations"].dump(), HasSubstr("tj.dev/kueue")) << name;
  }
  EXPECT_EQ(Suspended("digits").value("status", ""), "False");
}

TEST_F(KueueIntegrationTest, AQuotaHoldsASecondJobBackUntilTheFirstIsDone) {
  CreateQueuedJob("first");
  ASSERT_TRUE(ReconcileUntil("first", [&] { return PodsOf("first").size() == 4; }));
  CreateQueuedJob("second");
  Reconcile("second");
  ASSERT_TRUE(ReconcileUntil("second", [&] {
    return Workload("second")["status"].dump().find("insufficient unused quota") !=
           std::string::npos;
  })) << Workload("second").dump();
  EXPECT_TRUE(PodsOf("second").empty());
  EXPECT_THAT(Suspended("second").value("message", ""), HasSubstr("waits for admission"));

  RunToSuccess("first");
  ASSERT_TRUE(ReconcileUntil("second", [&] { return PodsOf("second").size() == 4; }));
}

TEST_F(KueueIntegrationTest, AHigherPriorityJobPreemptsAfterTheNoticeAndTheLowerOneIsReadmitted) {
  CreateQueuedJob("low", "user-queue", "low");
  ASSERT_TRUE(ReconcileUntil("low", [&] { return PodsOf("low").size() == 4; }));
  for (const auto& [name, pod] : PodsOf("low")) SetRunning(name);
  Reconcile("low");

  CreateQueuedJob("high", "user-queue", "high");
  Reconcile("high");
  EXPECT_EQ(Workload("high")["spec"]["priority"], 1000);
  ASSERT_TRUE(ReconcileUntil("low", [&] { return !notifier_.notices().empty(); }))
      << Workload("low").dump();
  const PreemptionNotice notice = notifier_.notices().front();
  EXPECT_EQ(notice.task_type, "chief");
  EXPECT_EQ(notice.reason, "KueueEviction/Preempted");
  EXPECT_THAT(PodsOf("low"), SizeIs(4)) << "the pods stay while the coordinator checkpoints";

  // The coordinator saved its checkpoint and exited with the restart code.
  SetExited("low-coordinator-0", 3);
  ASSERT_TRUE(ReconcileUntil("low", [&] { return PodsOf("low").empty(); }));
  ASSERT_TRUE(ReconcileUntil("low", [&] { return StateOf("low") == WorkloadState::kPending; }));
  EXPECT_EQ(Job("low")["status"].value("restartCount", 0), 0) << "an eviction is no failure";
  ASSERT_TRUE(ReconcileUntil("high", [&] { return PodsOf("high").size() == 4; }));
  EXPECT_TRUE(PodsOf("low").empty());

  RunToSuccess("high");
  ASSERT_TRUE(ReconcileUntil("low", [&] { return PodsOf("low").size() == 4; }));
  EXPECT_EQ(Suspended("low").value("status", ""), "False");
}

}  // namespace
}  // namespace tj::op::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new tj::kube::testing::KubeClusterEnvironment);
  ::testing::AddGlobalTestEnvironment(new tj::op::testing::KueueEnvironment);
  return RUN_ALL_TESTS();
}
