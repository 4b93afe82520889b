// FinishedStep over fakes: a running job passes through; a finished one has cleanPodPolicy
// applied again and is deleted ttlSecondsAfterFinished after its completion, the reconcile
// stopping either way.
#include "operator/controller/reconciler_finished.h"

#include "tests/operator/controller/reconcile_step_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

nlohmann::json Succeeded() {
  return {{"completionTime", "2027-01-15T08:00:00Z"},
          {"conditions",
           {{{"type", "Succeeded"}, {"status", "True"}, {"reason", "Succeeded"},
             {"lastTransitionTime", "2027-01-15T08:00:00Z"}}}}};
}

class FinishedStepTest : public StepTest {
 protected:
  FinishedStep step_{client_, events_, counting_};
};

TEST_F(FinishedStepTest, ARunningJobGoesOn) {
  SetJob("  runPolicy: {ttlSecondsAfterFinished: 60}\n");
  AllRunning();
  JobReconcile r = Reconcile();
  EXPECT_EQ(step_.Run(r).next, StepResult::Next::kContinue);
  EXPECT_THAT(client_.calls, IsEmpty());
}

TEST_F(FinishedStepTest, CleansUpAgainAndDeletesTheJobAtItsTtl) {
  SetJob("  runPolicy: {ttlSecondsAfterFinished: 60, cleanPodPolicy: Running}\n", 2, Succeeded());
  view_.pods = {Pod({ReplicaType::kCoordinator, 0}, 0), Pod({ReplicaType::kPs, 0})};
  now_ = absl::FromCivil(absl::CivilSecond(2027, 1, 15, 8, 0, 20), absl::UTCTimeZone());
  JobReconcile early = Reconcile();
  const StepResult waiting = step_.Run(early);
  EXPECT_EQ(waiting.next, StepResult::Next::kStop);
  EXPECT_EQ(waiting.requeue_after, absl::Seconds(40));
  EXPECT_THAT(client_.calls, ElementsAre("delete pods digits-ps-0")) << "no PS left running";

  client_.calls.clear();
  now_ += absl::Seconds(40);
  JobReconcile due = Reconcile();
  const StepResult deleted = step_.Run(due);
  EXPECT_EQ(deleted.next, StepResult::Next::kStop);
  EXPECT_FALSE(deleted.requeue_after.has_value());
  EXPECT_THAT(client_.calls,
              ElementsAre("delete pods digits-ps-0", "delete trainingjobs digits"));
}

TEST_F(FinishedStepTest, AFailedCleanUpIsRetried) {
  SetJob("  runPolicy: {cleanPodPolicy: All}\n", 2, Succeeded());
  view_.pods = {Pod({ReplicaType::kPs, 0})};
  client_.fail_calls["delete pods"] = absl::UnavailableError("down");
  JobReconcile r = Reconcile();
  const StepResult result = step_.Run(r);
  EXPECT_EQ(result.next, StepResult::Next::kStop);
  EXPECT_TRUE(absl::IsUnavailable(result.status));
}

}  // namespace
}  // namespace tj::op::testing
