// PodsStep (after DecideStep, over fakes): a scaled-away worker is drained (notice) then deleted;
// a restarted replica's pod is deleted, remembered and counted, and its successor queued unless
// a step holds the job; a failed delete fails the reconcile only after the creates are queued.
#include "operator/controller/reconciler_pods.h"

#include "operator/controller/reconciler_decide.h"
#include "tests/operator/controller/reconcile_step_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

class PodsStepTest : public StepTest {
 protected:
  // The reconcile as DecideStep leaves it.
  JobReconcile Decided() {
    JobReconcile r = Reconcile();
    EXPECT_EQ(decide_.Run(r).next, StepResult::Next::kContinue);
    return r;
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

}  // namespace
}  // namespace tj::op::testing
