// StuckPodsStep over fakes: a pod Terminating on a lost node past its deletion deadline is deleted
// without grace after --terminating-pod-timeout when its replica's replacementPolicy is Failed
// (the coordinator's and PS's default), and at its deadline under TerminatingOrFailed (workers').
#include "operator/controller/reconciler_stuck_pods.h"

#include "api/v1alpha1/status_json.h"
#include "tests/operator/controller/reconcile_step_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class StuckPodsStepTest : public StepTest {
 protected:
  void SetUp() override {
    SetJob();
    AllRunning();
    view_.nodes["node-a"] = {
        {"metadata", {{"name", "node-a"}}},
        {"status", {{"conditions", {{{"type", "Ready"}, {"status", "Unknown"}}}}}}};
  }
  // The replica's pod was deleted with its deadline `ago` before now.
  void Deleted(size_t pod, absl::Duration ago) {
    view_.pods[pod]["metadata"]["deletionTimestamp"] = v1alpha1::FormatKubernetesTime(now_ - ago);
  }
  StuckPodsStep step_{view_, client_, events_, absl::Minutes(5)};
};

TEST_F(StuckPodsStepTest, APsWaitsForTheTimeoutAndAWorkerIsFreedAtItsDeadline) {
  Deleted(1, absl::Seconds(10));  // digits-ps-0
  Deleted(2, absl::Seconds(10));  // digits-worker-0
  JobReconcile r = Reconcile();
  const StepResult result = step_.Run(r);
  EXPECT_THAT(client_.calls, ElementsAre("delete pods digits-worker-0"));
  ASSERT_TRUE(result.requeue_after.has_value());
  EXPECT_EQ(*result.requeue_after, absl::Minutes(5) - absl::Seconds(10)) << "when the PS is due";

  client_.calls.clear();
  now_ += absl::Minutes(5);
  JobReconcile later = Reconcile();
  step_.Run(later);
  EXPECT_THAT(client_.calls, ElementsAre("delete pods digits-ps-0", "delete pods digits-worker-0"));
}

TEST_F(StuckPodsStepTest, AWorkerUnderFailedWaitsForTheTimeoutToo) {
  job_json_["spec"]["replicaSpecs"]["Worker"]["replacementPolicy"] = "Failed";
  view_.jobs["ml/digits"] = job_json_;
  Deleted(2, absl::Seconds(10));
  JobReconcile r = Reconcile();
  step_.Run(r);
  EXPECT_THAT(client_.calls, IsEmpty());
}

TEST_F(StuckPodsStepTest, APodOnAReadyNodeIsLeftToItsKubelet) {
  view_.nodes["node-a"]["status"]["conditions"][0]["status"] = "True";
  Deleted(2, absl::Minutes(10));
  JobReconcile r = Reconcile();
  step_.Run(r);
  EXPECT_THAT(client_.calls, IsEmpty());
}

}  // namespace
}  // namespace tj::op::testing
