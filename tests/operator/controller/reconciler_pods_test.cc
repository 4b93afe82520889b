// PodsStep (after DecideStep, over fakes): a scaled-away worker is drained (notice) then deleted;
// a restarted replica's pod is deleted, remembered and counted, and its successor queued unless
// a step holds the job; a failed delete fails the reconcile only after the creates are queued.
// The failure policy through both steps and the status it leads to: a RestartJob rule deletes
// every pod (each remembered, so its end is never judged) and queues them all, counted once; a
// FailJob rule fails the job naming the rule; an evicted pod matches Evicted; a type past its
// restartLimit (read from the status's countedRestarts) fails the job.
#include "operator/controller/reconciler_pods.h"

#include "api/v1alpha1/status_json.h"
#include "operator/controller/job_status.h"
#include "operator/controller/reconciler_decide.h"
#include "tests/operator/controller/reconcile_step_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

constexpr char kRestartJobOnWorkerKill[] = R"(  failurePolicy:
    rules:
    - action: Ignore
      onPodConditions: [DisruptionTarget]
    - action: RestartJob
      replicaTypes: [Worker]
      onExitCodes: {operator: In, values: [137]}
)";

class PodsStepTest : public StepTest {
 protected:
  // The reconcile as DecideStep leaves it.
  JobReconcile Decided() {
    JobReconcile r = Reconcile();
    EXPECT_EQ(decide_.Run(r).next, StepResult::Next::kContinue);
    return r;
  }
  // The status NextJobStatus makes of the reconcile's decision.
  v1alpha1::TrainingJobStatus NextStatus(const JobReconcile& r) {
    StatusUpdate update;
    update.pods = &r.pods;
    update.decision = &r.decision;
    update.now = now_;
    return NextJobStatus(r.status, update);
  }
  NoticesStep notices_{view_, notifier_, events_, counting_, nullptr};
  InvalidSpec invalid_{view_, client_, events_};
  DecideStep decide_{notices_, invalid_};
  RestartedPods restarted_;
  PodsStep step_{client_, events_, notices_, restarted_, counting_, options_};
};

TEST_F(PodsStepTest, AScaledAwayWorkerIsDrainedThenDeleted) {
  SetJob("", /*workers=*/2);
  AllRunning();
  SetJob("", /*workers=*/1);  // kubectl scale
  JobReconcile r = Decided();
  ASSERT_THAT(r.decision.to_stop, ElementsAre(ReplicaKey{ReplicaType::kWorker, 1}));
  EXPECT_EQ(step_.Run(r).next, StepResult::Next::kContinue);
  ASSERT_EQ(notifier_.notices().size(), 1u);
  EXPECT_EQ(notifier_.notices()[0].reason, kScaleDownNoticeReason);
  EXPECT_EQ(notifier_.notices()[0].task_index, 1);
  EXPECT_THAT(client_.calls, ElementsAre("delete pods digits-worker-1"));
  EXPECT_EQ(counting_.Snapshot().pods_deleted, 1);
  EXPECT_TRUE(r.writes.empty());
}

TEST_F(PodsStepTest, ARestartDeletesRemembersCountsAndQueuesTheSuccessor) {
  SetJob();
  AllRunning();
  view_.pods.back() = Pod({ReplicaType::kWorker, 1}, /*exit_code=*/137);
  JobReconcile r = Decided();
  ASSERT_EQ(r.decision.restarts.size(), 1u);
  step_.Run(r);
  EXPECT_THAT(client_.calls, ElementsAre("delete pods digits-worker-1"));
  EXPECT_TRUE(restarted_.Contains("uid-digits-worker-1")) << "a stale cache must not count it twice";
  EXPECT_EQ(counting_.Snapshot().restarts_by_reason.size(), 1u);
  EXPECT_THAT(Queued(r), ElementsAre("pods/digits-worker-1"));
  EXPECT_EQ(r.writes[0].kind, WriteKind::kPod);
  EXPECT_TRUE(r.writes[0].urgent);
  EXPECT_THAT(events_.events(), Contains(::testing::StartsWith("Warning RestartingReplica")));
}

TEST_F(PodsStepTest, AHeldJobRestartsButCreatesNoPod) {
  SetJob();
  view_.pods = {Pod({ReplicaType::kCoordinator, 0}), Pod({ReplicaType::kWorker, 0}, 137)};
  JobReconcile r = Decided();
  ASSERT_FALSE(r.decision.to_create.empty());
  r.checkpoint_volume_problem = "the claim is missing";
  step_.Run(r);
  EXPECT_THAT(client_.calls, ElementsAre("delete pods digits-worker-0"));
  EXPECT_THAT(r.writes, IsEmpty()) << "the successor waits for a later reconcile";
}

TEST_F(PodsStepTest, AFailedDeleteFailsTheReconcileAfterTheCreatesAreQueued) {
  SetJob();
  view_.pods = {Pod({ReplicaType::kCoordinator, 0}), Pod({ReplicaType::kWorker, 0}, 137)};
  client_.fail_calls["delete pods"] = absl::UnavailableError("down");
  JobReconcile r = Decided();
  const StepResult result = step_.Run(r);
  EXPECT_EQ(result.next, StepResult::Next::kContinue);
  EXPECT_TRUE(absl::IsUnavailable(result.status));
  EXPECT_FALSE(restarted_.Contains("uid-digits-worker-0"));
  EXPECT_THAT(Queued(r), ElementsAre("pods/digits-ps-0", "pods/digits-worker-1"))
      << "the missing pods are still created; the restarted one is not replaced yet";
}

TEST_F(PodsStepTest, ACoordinatorExitAfterAPsDisruptionIsNotCounted) {
  SetJob();
  AllRunning();
  view_.pods[1]["status"]["conditions"].push_back(
      {{"type", "DisruptionTarget"}, {"status", "True"}, {"reason", "PreemptionByScheduler"}});
  JobReconcile disrupted = Reconcile();
  notices_.Run(disrupted);
  view_.pods[0] = Pod({ReplicaType::kCoordinator, 0}, /*exit_code=*/42);
  JobReconcile r = Decided();
  ASSERT_EQ(r.decision.restarts.size(), 1u);
  EXPECT_EQ(r.decision.restart_count, 0) << "part of the PS's disruption";
}

TEST_F(PodsStepTest, RestartJobDeletesEveryPodAndQueuesThemAllCountedOnce) {
  SetJob(kRestartJobOnWorkerKill);
  AllRunning();
  view_.pods.back() = Pod({ReplicaType::kWorker, 1}, /*exit_code=*/137);
  JobReconcile r = Decided();
  ASSERT_TRUE(r.decision.restart_job);
  EXPECT_EQ(r.decision.reason, "FailurePolicyRestartJob");
  EXPECT_EQ(step_.Run(r).next, StepResult::Next::kContinue);
  EXPECT_THAT(client_.calls,
              UnorderedElementsAre("delete pods digits-coordinator-0", "delete pods digits-ps-0",
                                   "delete pods digits-worker-0", "delete pods digits-worker-1"));
  for (const char* uid : {"uid-digits-coordinator-0", "uid-digits-ps-0", "uid-digits-worker-0",
                          "uid-digits-worker-1"}) {
    EXPECT_TRUE(restarted_.Contains(uid)) << uid << ": its end must not be judged as a failure";
  }
  EXPECT_THAT(Queued(r), UnorderedElementsAre("pods/digits-coordinator-0", "pods/digits-ps-0",
                                              "pods/digits-worker-0", "pods/digits-worker-1"));
  const v1alpha1::TrainingJobStatus status = NextStatus(r);
  EXPECT_EQ(status.restart_count, 1) << "the job's restart counts once";
  EXPECT_EQ(status.replica_statuses.at(ReplicaType::kWorker).counted_restarts, 1);
  EXPECT_EQ(status.replica_statuses.at(ReplicaType::kPs).counted_restarts, 0);
  EXPECT_EQ(status.replica_statuses.at(ReplicaType::kPs).restarts, 1);
  EXPECT_EQ(status.coordinator_restarts, 1) << "the coordinator restores from the checkpoint";
  EXPECT_EQ(v1alpha1::TrainingJobStatusToJson(status)["replicaStatuses"]["Worker"]
                ["countedRestarts"],
            1);
}

TEST_F(PodsStepTest, ADisruptionIgnoredFirstRestartsOnlyThatReplica) {
  SetJob(kRestartJobOnWorkerKill);
  AllRunning();
  view_.pods.back() = Pod({ReplicaType::kWorker, 1}, /*exit_code=*/137);
  view_.pods.back()["status"]["conditions"] = nlohmann::json::array(
      {{{"type", "DisruptionTarget"}, {"status", "True"}, {"reason", "PreemptionByScheduler"}}});
  JobReconcile r = Decided();
  EXPECT_FALSE(r.decision.restart_job) << "rules[0] (Ignore) matches first";
  step_.Run(r);
  EXPECT_THAT(client_.calls, ElementsAre("delete pods digits-worker-1"));
  EXPECT_EQ(NextStatus(r).restart_count, 0);
}

TEST_F(PodsStepTest, FailJobFailsTheJobNamingTheRule) {
  SetJob(R"(  failurePolicy:
    rules:
    - action: FailJob
      replicaTypes: [Worker]
      onExitCodes: {operator: In, values: [3]}
)");
  AllRunning();
  view_.pods.back() = Pod({ReplicaType::kWorker, 1}, /*exit_code=*/3);
  JobReconcile r = Decided();
  EXPECT_EQ(r.decision.phase, JobPhase::kFailed);
  EXPECT_EQ(r.decision.reason, "FailurePolicyFailJob");
  EXPECT_THAT(r.decision.message,
              HasSubstr("worker 1 exited with code 3, which matches spec.failurePolicy.rules[0]"));
  step_.Run(r);
  EXPECT_THAT(Queued(r), ElementsAre()) << "nothing restarts";
  const v1alpha1::TrainingJobStatus status = NextStatus(r);
  EXPECT_EQ(status.state, "Failed");
}

TEST_F(PodsStepTest, AnEvictedPodMatchesEvicted) {
  SetJob(R"(  failurePolicy:
    rules:
    - action: Count
      onPodConditions: [Evicted]
)");
  AllRunning();
  nlohmann::json& worker = view_.pods.back();
  worker["status"] = kubelet::ExitedPodStatus(137);
  worker["status"]["reason"] = "Evicted";
  JobReconcile r = Decided();
  ASSERT_EQ(r.decision.restarts.size(), 1u);
  EXPECT_EQ(r.decision.restarts[0].second.reason, "FailurePolicyCount");
  EXPECT_EQ(r.decision.restart_count, 1) << "counted, unlike an eviction without the rule";
}

TEST_F(PodsStepTest, ATypePastItsRestartLimitFailsTheJob) {
  const std::string limit = "      restartLimit: 1\n";
  SetJob(limit, 2,
         {{"restartCount", 1},
          {"replicaStatuses",
           {{"Worker", {{"active", 2}, {"restarts", 1}, {"countedRestarts", 1}}}}}});
  // restartLimit belongs to the Worker spec, the last lines of the manifest.
  ASSERT_EQ(Job().spec.replica_specs.at(ReplicaType::kWorker).restart_limit, 1);
  AllRunning();
  view_.pods.back() = Pod({ReplicaType::kWorker, 1}, /*exit_code=*/42);
  JobReconcile r = Decided();
  EXPECT_EQ(r.decision.phase, JobPhase::kFailed);
  EXPECT_EQ(r.decision.reason, "RestartLimitExceeded");
  EXPECT_THAT(r.decision.message, HasSubstr("spec.replicaSpecs.Worker.restartLimit 1 reached"));
}

// One PS preemption, one coordinator restart: the coordinator checkpointed on the PS's notice and
// exited with the restart code while the PS still runs out its notice. Its pod is deleted (the
// restart is decided, not counted) but no successor is queued; later reconciles create none
// while the PS is there; once the PS has ended both are queued.
TEST_F(PodsStepTest, ACoordinatorWaitsForAPsGivenNoticeBeforeItsSuccessorIsCreated) {
  SetJob();
  AllRunning();
  view_.pods[1]["status"]["conditions"].push_back(
      {{"type", "DisruptionTarget"}, {"status", "True"}, {"reason", "PreemptionByScheduler"}});
  JobReconcile noticed = Reconcile();
  notices_.Run(noticed);
  view_.pods[0] = Pod({ReplicaType::kCoordinator, 0}, /*exit_code=*/42);
  JobReconcile r = Decided();
  ASSERT_EQ(r.decision.restarts.size(), 1u);
  EXPECT_TRUE(r.decision.Held(ReplicaKey{ReplicaType::kCoordinator, 0}));
  step_.Run(r);
  EXPECT_THAT(client_.calls, ElementsAre("delete pods digits-coordinator-0"));
  EXPECT_THAT(r.writes, IsEmpty()) << "no coordinator against the PS about to go";
  EXPECT_EQ(NextStatus(r).restart_count, 0);

  view_.pods.erase(view_.pods.begin());  // the old coordinator is gone
  client_.calls.clear();
  JobReconcile waiting = Decided();
  EXPECT_EQ(waiting.decision.reason, "WaitingForReplacement");
  step_.Run(waiting);
  EXPECT_THAT(client_.calls, IsEmpty());
  EXPECT_THAT(waiting.writes, IsEmpty());

  // The PS is killed at the end of its notice: it restarts, and the coordinator is made with it.
  view_.pods[0] = Pod({ReplicaType::kPs, 0}, /*exit_code=*/143);
  view_.pods[0]["status"]["conditions"].push_back(
      {{"type", "DisruptionTarget"}, {"status", "True"}, {"reason", "PreemptionByScheduler"}});
  JobReconcile replaced = Decided();
  step_.Run(replaced);
  EXPECT_THAT(client_.calls, ElementsAre("delete pods digits-ps-0"));
  EXPECT_THAT(Queued(replaced), UnorderedElementsAre("pods/digits-ps-0", "pods/digits-coordinator-0"));
  EXPECT_EQ(NextStatus(replaced).restart_count, 0);
}

TEST_F(PodsStepTest, ACoordinatorUnderTerminatingOrFailedDoesNotWaitForThePs) {
  SetJob();
  job_json_["spec"]["replicaSpecs"]["Coordinator"]["replacementPolicy"] = "TerminatingOrFailed";
  view_.jobs["ml/digits"] = job_json_;
  AllRunning();
  view_.pods[1]["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:30Z";
  view_.pods[0] = Pod({ReplicaType::kCoordinator, 0}, /*exit_code=*/42);
  JobReconcile r = Decided();
  EXPECT_TRUE(r.decision.held.empty());
  step_.Run(r);
  EXPECT_THAT(Queued(r), ElementsAre("pods/digits-coordinator-0"));
}

}  // namespace
}  // namespace tj::op::testing
