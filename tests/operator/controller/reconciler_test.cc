// The Reconciler over fakes (no API server): its steps in order; a new job's first reconcile
// makes the Secret, the pods, the Services and then the status, once, with one Event; creates
// awaited in a cache make the next reconcile create nothing and come back at their expiry; an
// invalid spec fails a job that has no pods; a deleted job is forgotten; a job another
// controller manages is left alone, but for the Workload of one MultiKueue dispatches.
#include "operator/controller/reconciler.h"

#include "tests/operator/controller/reconcile_step_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

class ReconcilerTest : public StepTest {
 protected:
  Reconciler& Make() {
    options_.clock = [this] { return now_; };
    reconciler_ = std::make_unique<Reconciler>(view_, client_, notifier_, events_, options_);
    return *reconciler_;
  }
  std::unique_ptr<Reconciler> reconciler_;
};

TEST_F(ReconcilerTest, RunsItsStepsInOrder) {
  EXPECT_THAT(Make().StepNames(),
              ElementsAre("WorkloadFinished", "Finished", "Secret", "AwaitCreations",
                          "NetworkPolicy", "Services", "Notices", "StuckPods", "Admission",
                          "Decide", "PendingPods", "PodGroup", "CheckpointVolume",
                          "CheckpointStorage",
                          "Status", "Pods", "Dispatch"));
}

TEST_F(ReconcilerTest, ANewJobGetsItsSecretPodsServicesAndStatusOnceWithOneEvent) {
  SetJob();
  const ReconcileResult result = Make().Reconcile("ml/digits");
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_FALSE(result.requeue_after.has_value()) << "inline writes read back live are observed";
  EXPECT_THAT(client_.calls,
              ElementsAre("create secrets", "create pods", "create pods", "create pods",
                          "create pods", "create services", "create services", "create services",
                          "create services", "update trainingjobs/status digits"));
  EXPECT_THAT(events_.events(),
              ElementsAre("Normal Created: created the token secret digits-job-token, 4 pods "
                          "(digits-coordinator-0, digits-ps-0, digits-worker-0, digits-worker-1) "
                          "and 4 services (digits-coordinator-0, digits-ps-0, digits-worker-0, "
                          "digits-worker-1)"));
  ASSERT_FALSE(client_.bodies.empty());
  EXPECT_EQ(client_.bodies.back()["status"]["replicaStatuses"]["Worker"]["active"], 2);
}

TEST_F(ReconcilerTest, ARefusedCheckpointBucketHoldsANewJobsPodsAndComesBack) {
  SetJob("  checkpoint:\n    dir: s3://tj-ckpt/digits\n    s3:\n      endpoint: http://s3.test\n"
         "      credentialsSecret: {name: ckpt-s3}\n");
  client_.objects["secrets/ml/ckpt-s3"] = {
      {"metadata", {{"name", "ckpt-s3"}, {"namespace", "ml"}}},
      {"data", {{"AWS_ACCESS_KEY_ID", "QUtJQUVYQU1QTEU="}, {"AWS_SECRET_ACCESS_KEY", "c2VjcmV0"}}}};
  options_.checkpoint_bucket_probe = [](const v1alpha1::TrainingJob&, const S3Credentials&) {
    return absl::FailedPreconditionError("bucket tj-ckpt does not exist at http://s3.test");
  };
  const ReconcileResult result = Make().Reconcile("ml/digits");
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(result.requeue_after, absl::Seconds(30)) << "buckets are not watched";
  EXPECT_THAT(client_.calls, Contains("get secrets ckpt-s3"));
  EXPECT_THAT(client_.calls, Not(Contains("create pods"))) << "no pod while the bucket is missing";
  bool held = false;
  for (const nlohmann::json& body : client_.bodies) {
    if (!body.contains("status")) continue;
    for (const nlohmann::json& c : body["status"].value("conditions", nlohmann::json::array())) {
      held |= c.value("type", "") == "Created" && c.value("status", "") == "False" &&
              c.value("reason", "") == "CheckpointStorageUnavailable" &&
              c.value("message", "").find("bucket tj-ckpt does not exist") != std::string::npos;
    }
  }
  EXPECT_TRUE(held) << ::testing::PrintToString(client_.calls);
  EXPECT_TRUE(events_.Has("Warning CheckpointStorageUnavailable"));
}

TEST_F(ReconcilerTest, CreatesAwaitedInACacheHoldTheNextReconcileUntilTheyExpire) {
  SetJob();
  view_.live = false;
  Reconciler& reconciler = Make();
  ASSERT_TRUE(reconciler.Reconcile("ml/digits").status.ok());
  const size_t calls = client_.calls.size();
  now_ += absl::Minutes(1);
  const ReconcileResult again = reconciler.Reconcile("ml/digits");
  ASSERT_TRUE(again.status.ok()) << again.status;
  EXPECT_EQ(client_.calls.size(), calls) << "a missing pod may be one being created";
  EXPECT_EQ(again.requeue_after, absl::Minutes(4)) << "the expectations' expiry";
}

TEST_F(ReconcilerTest, AnInvalidSpecFailsAJobThatHasNoPods) {
  SetJob("", /*workers=*/-1);
  const ReconcileResult result = Make().Reconcile("ml/digits");
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_THAT(client_.calls, ElementsAre("update trainingjobs/status digits"));
  EXPECT_EQ(client_.bodies[0]["status"]["state"], "Failed");
  EXPECT_THAT(client_.bodies[0]["status"].dump(), HasSubstr("spec.replicaSpecs.Worker.replicas"));
  EXPECT_TRUE(events_.Has("Warning InvalidSpec"));
}

TEST_F(ReconcilerTest, ADeletedJobIsForgotten) {
  SetJob();
  view_.live = false;
  Reconciler& reconciler = Make();
  ASSERT_TRUE(reconciler.Reconcile("ml/digits").status.ok());
  ASSERT_FALSE(reconciler.expectations().Pending("ml/digits").empty());
  view_.jobs.clear();
  EXPECT_TRUE(reconciler.Reconcile("ml/digits").status.ok());
  EXPECT_THAT(reconciler.expectations().Pending("ml/digits"), IsEmpty());
}

// spec.managedBy naming another controller (MultiKueue): no Secret, pod, Service or status write,
// even for a spec this operator would call invalid; our own value is reconciled as unset is.
TEST_F(ReconcilerTest, AJobManagedByAnotherControllerIsLeftAlone) {
  SetJob("  managedBy: kueue.x-k8s.io/multikueue\n");
  ReconcileResult result = Make().Reconcile("ml/digits");
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_FALSE(result.requeue_after.has_value());
  SetJob("  managedBy: example.com/other\n", /*workers=*/-1);
  result = reconciler_->Reconcile("ml/digits");
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_THAT(client_.calls, IsEmpty());
  EXPECT_THAT(events_.events(), IsEmpty());

  SetJob("  managedBy: trainingjob.dev/tj-operator\n");
  ASSERT_TRUE(reconciler_->Reconcile("ml/digits").status.ok());
  EXPECT_THAT(client_.calls, Contains("create pods"));
  EXPECT_THAT(client_.calls, Contains("update trainingjobs/status digits"));
}

// With --kueue, a job MultiKueue dispatches from this (manager) cluster gets its Workload, which
// MultiKueue copies to a worker cluster, and nothing else: no pod, no status write.
TEST_F(ReconcilerTest, AJobMultiKueueDispatchesGetsItsWorkloadAndNothingElse) {
  options_.kueue.enabled = true;
  options_.kueue.poll_interval = absl::Seconds(5);
  SetJob("  managedBy: kueue.x-k8s.io/multikueue\n");
  job_json_["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "user-queue";
  job_json_["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "high";
  view_.jobs["ml/digits"] = job_json_;
  Reconciler& reconciler = Make();
  ReconcileResult result = reconciler.Reconcile("ml/digits");
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(result.requeue_after, absl::Seconds(5)) << "the priority class is polled for";
  EXPECT_THAT(client_.calls, ElementsAre("get workloads trainingjob-digits",
                                         "get workloadpriorityclasses high"));
  client_.objects["workloadpriorityclasses//high"] = {{"value", 1000}};
  client_.calls.clear();
  result = reconciler.Reconcile("ml/digits");
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_FALSE(result.requeue_after.has_value());
  EXPECT_THAT(client_.calls,
              ElementsAre("get workloads trainingjob-digits", "get workloadpriorityclasses high",
                          "create workloads"));
  const nlohmann::json& w = client_.objects.at("workloads/ml/trainingjob-digits");
  EXPECT_EQ(w["spec"]["queueName"], "user-queue");
  EXPECT_EQ(w["spec"]["priority"], 1000);
  EXPECT_THAT(w["spec"]["podSets"], SizeIs(3));
  EXPECT_EQ(w["metadata"]["ownerReferences"][0]["kind"], "TrainingJob");
  EXPECT_EQ(w["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_THAT(events_.events(),
              ElementsAre("Warning PriorityClassNotFound: metadata.labels[kueue.x-k8s.io/"
                          "priority-class]: WorkloadPriorityClass high does not exist; the job "
                          "waits, without pods, until it does",
                          HasSubstr("Normal CreatedWorkload: created Workload "
                                    "ml/trainingjob-digits in LocalQueue user-queue")));

  // Made: only runPolicy.suspend is carried to it, as spec.active.
  client_.calls.clear();
  EXPECT_TRUE(reconciler.Reconcile("ml/digits").status.ok());
  EXPECT_THAT(client_.calls, ElementsAre("get workloads trainingjob-digits"));
  job_json_["spec"]["runPolicy"]["suspend"] = true;
  view_.jobs["ml/digits"] = job_json_;
  client_.calls.clear();
  EXPECT_TRUE(reconciler.Reconcile("ml/digits").status.ok());
  EXPECT_THAT(client_.calls, ElementsAre("get workloads trainingjob-digits",
                                         "patch workloads trainingjob-digits"));
  EXPECT_EQ(client_.objects.at("workloads/ml/trainingjob-digits")["spec"]["active"], false);
  EXPECT_THAT(client_.calls, Not(Contains(HasSubstr("trainingjobs/status"))));
}

TEST_F(ReconcilerTest, AJobMultiKueueDispatchesWithoutAQueueOrWithABadSpecGetsNoWorkload) {
  options_.kueue.enabled = true;
  SetJob("  managedBy: kueue.x-k8s.io/multikueue\n");
  Reconciler& reconciler = Make();
  ASSERT_TRUE(reconciler.Reconcile("ml/digits").status.ok());
  EXPECT_THAT(client_.calls, IsEmpty()) << "no queue label: nothing for MultiKueue";

  SetJob("  managedBy: kueue.x-k8s.io/multikueue\n", /*workers=*/-1);
  job_json_["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "user-queue";
  view_.jobs["ml/digits"] = job_json_;
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(reconciler.Reconcile("ml/digits").status.ok());
  EXPECT_THAT(client_.calls, IsEmpty());
  ASSERT_THAT(events_.events(), SizeIs(1)) << "posted once";
  EXPECT_THAT(events_.events()[0],
              AllOf(HasSubstr("Warning InvalidSpec: spec."),
                    HasSubstr("no Workload is made, so MultiKueue cannot dispatch the job")));
}

// Issue 18 item 5: a coordinator that gave up waiting for a PS the scheduler cannot place exits
// with the restart code; that is waiting, and must not spend backoffLimit (an unschedulable PS
// used to use up the default budget in about an hour).
TEST_F(ReconcilerTest, ACoordinatorThatGaveUpOnAPendingPsIsNotACountedRestart) {
  SetJob();
  AllRunning();
  for (nlohmann::json& pod : view_.pods) {
    const std::string name = pod["metadata"]["name"];
    if (name == "digits-ps-0") pod["status"] = {{"phase", "Pending"}};
    if (name == "digits-coordinator-0") pod["status"] = kubelet::ExitedPodStatus(42);
  }
  const ReconcileResult result = Make().Reconcile("ml/digits");
  ASSERT_TRUE(result.status.ok()) << result.status;
  nlohmann::json status;
  for (const nlohmann::json& body : client_.bodies) {
    if (body.contains("status")) status = body["status"];
  }
  ASSERT_FALSE(status.is_null()) << ::testing::PrintToString(client_.calls);
  EXPECT_EQ(status.value("restartCount", -1), 0);
  EXPECT_EQ(status["replicaStatuses"]["Coordinator"].value("restarts", 0), 1);
  EXPECT_THAT(status.dump(), HasSubstr("WaitingForPs"));
}

TEST_F(ReconcilerTest, AReadThatFailsIsAnErrorNotAnEmptyJob) {
  SetJob();
  view_.fail_pods = absl::UnavailableError("cache not synced");
  const ReconcileResult result = Make().Reconcile("ml/digits");
  EXPECT_TRUE(absl::IsUnavailable(result.status));
  EXPECT_THAT(client_.calls, IsEmpty()) << "nothing is recreated from an unreadable world";
}

}  // namespace
}  // namespace tj::op::testing
