// PendingPodsStep over fakes: a pod the scheduler cannot place gives the job the Stuck judgement
// and one Warning Event (none again while the status already says it), comes back when the
// pending timeout falls due, and fails the job once it has passed; an ended or suspended job
// waits for nothing.
#include "operator/controller/reconciler_pending_pods.h"

#include "tests/operator/controller/reconcile_step_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class PendingPodsStepTest : public StepTest {
 protected:
  // Every replica running but the PS, which the scheduler cannot place; created at t0.
  void PsUnschedulable() {
    AllRunning();
    for (nlohmann::json& pod : view_.pods) {
      if (pod["metadata"]["name"] != "digits-ps-0") continue;
      pod["metadata"]["creationTimestamp"] = "2027-01-15T08:00:00Z";
      pod["status"] = {{"phase", "Pending"},
                       {"conditions",
                        {{{"type", "PodScheduled"}, {"status", "False"},
                          {"reason", "Unschedulable"},
                          {"message", "0/3 nodes are available: 3 Insufficient memory."}}}}};
    }
  }
  JobReconcile Decided(JobPhase phase = JobPhase::kRunning) {
    JobReconcile r = Reconcile();
    r.decision.phase = phase;
    return r;
  }
  const absl::Time t0_ = absl::FromCivil(absl::CivilSecond(2027, 1, 15, 8, 0, 0),
                                         absl::UTCTimeZone());
  PendingPodsStep step_{events_};
};

TEST_F(PendingPodsStepTest, AnUnschedulablePodIsReportedOnce) {
  SetJob();
  PsUnschedulable();
  now_ = t0_ + absl::Minutes(3);
  JobReconcile r = Decided();
  const StepResult result = step_.Run(r);
  EXPECT_EQ(result.next, StepResult::Next::kContinue);
  EXPECT_FALSE(result.requeue_after.has_value()) << "no timeout: pod changes bring it back";
  ASSERT_TRUE(r.stuck.has_value());
  EXPECT_EQ(r.stuck->reason, "Unschedulable");
  EXPECT_EQ(r.decision.phase, JobPhase::kRunning);
  EXPECT_THAT(events_.events(),
              ElementsAre("Warning Unschedulable: a pod cannot start: digits-ps-0: Unschedulable "
                          "(0/3 nodes are available: 3 Insufficient memory.)"));

  // The status now says it (the status step wrote it): no second Event.
  SetJob("", 2,
         {{"conditions",
           {{{"type", "Stuck"}, {"status", "True"}, {"reason", r.stuck->reason},
             {"message", r.stuck->message}}}}});
  JobReconcile again = Decided();
  step_.Run(again);
  EXPECT_EQ(events_.events().size(), 1u);
}

TEST_F(PendingPodsStepTest, ComesBackAtThePendingTimeoutAndThenFailsTheJob) {
  SetJob("  runPolicy: {pendingTimeoutSeconds: 600}\n");
  PsUnschedulable();
  now_ = t0_ + absl::Minutes(4);
  JobReconcile early = Decided();
  EXPECT_EQ(step_.Run(early).requeue_after, absl::Minutes(6));
  EXPECT_EQ(early.decision.phase, JobPhase::kRunning);

  now_ = t0_ + absl::Minutes(10);
  JobReconcile due = Decided();
  step_.Run(due);
  EXPECT_EQ(due.decision.phase, JobPhase::kFailed);
  EXPECT_EQ(due.decision.reason, "PendingTimeout");
  EXPECT_THAT(due.decision.message, HasSubstr("runPolicy.pendingTimeoutSeconds (600) passed"));
  EXPECT_THAT(due.decision.message, HasSubstr("digits-ps-0: Unschedulable"));
  EXPECT_EQ(due.decision.to_stop.size(), 4u) << "cleanPodPolicy Running stops every pod left";
  EXPECT_THAT(due.decision.to_create, IsEmpty());
}

TEST_F(PendingPodsStepTest, AnEndedOrSuspendedJobWaitsForNothing) {
  SetJob("  runPolicy: {pendingTimeoutSeconds: 1}\n");
  PsUnschedulable();
  now_ = t0_ + absl::Hours(1);
  for (JobPhase phase : {JobPhase::kSucceeded, JobPhase::kFailed, JobPhase::kSuspended}) {
    JobReconcile r = Decided(phase);
    step_.Run(r);
    EXPECT_FALSE(r.stuck.has_value());
    EXPECT_EQ(r.decision.phase, phase);
  }
  EXPECT_THAT(events_.events(), IsEmpty());
}

}  // namespace
}  // namespace tj::op::testing
