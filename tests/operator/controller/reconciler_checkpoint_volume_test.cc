// CheckpointVolumeStep over fakes: the claim is looked at only when a coordinator or PS pod is
// about to be made; a claim from the template is created; a missing or ReadWriteOnce claim holds
// the job with one Warning and a retry interval; a failure a retry may fix stops the reconcile.
#include "operator/controller/reconciler_checkpoint_volume.h"

#include "tests/operator/controller/reconcile_step_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kNamedClaim[] = "  checkpoint:\n    dir: /ckpt\n    volume: {claimName: shared}\n";
constexpr char kClaimTemplate[] =
    "  checkpoint:\n    dir: /ckpt\n    volume: {claimTemplate: {resources: {requests: {storage: "
    "1Gi}}}}\n";

nlohmann::json Claim(const std::string& name, const std::string& access_mode) {
  return {{"metadata", {{"name", name}, {"namespace", "ml"}}},
          {"spec", {{"accessModes", nlohmann::json::array({access_mode})}}},
          {"status", {{"phase", "Bound"}}}};
}

class CheckpointVolumeStepTest : public StepTest {
 protected:
  JobReconcile Creating(ReplicaType type) {
    JobReconcile r = Reconcile();
    r.decision.to_create = {{type, 0}};
    return r;
  }
  CheckpointVolumeStep step_{client_, events_, absl::Seconds(30)};
};

TEST_F(CheckpointVolumeStepTest, OnlyAPodThatMountsTheClaimMakesItBeLookedAt) {
  SetJob(kNamedClaim);
  JobReconcile worker = Creating(ReplicaType::kWorker);
  EXPECT_EQ(step_.Run(worker).next, StepResult::Next::kContinue);
  JobReconcile nothing = Reconcile();
  step_.Run(nothing);
  EXPECT_THAT(client_.calls, IsEmpty());
  JobReconcile ps = Creating(ReplicaType::kPs);
  step_.Run(ps);
  EXPECT_THAT(client_.calls, ElementsAre("get persistentvolumeclaims shared"));
}

TEST_F(CheckpointVolumeStepTest, AMissingOrReadWriteOnceClaimHoldsTheJobWithOneWarning) {
  SetJob(kNamedClaim);
  for (int i = 0; i < 2; ++i) {
    JobReconcile r = Creating(ReplicaType::kCoordinator);
    const StepResult result = step_.Run(r);
    EXPECT_THAT(r.checkpoint_volume_problem,
                HasSubstr("PersistentVolumeClaim ml/shared (spec.checkpoint.volume.claimName) "
                          "does not exist"));
    EXPECT_FALSE(r.MayCreatePods());
    EXPECT_EQ(result.requeue_after, absl::Seconds(30)) << "claims are not watched";
  }
  client_.objects["persistentvolumeclaims/ml/shared"] = Claim("shared", "ReadWriteOnce");
  JobReconcile rwo = Creating(ReplicaType::kCoordinator);
  step_.Run(rwo);
  EXPECT_THAT(rwo.checkpoint_volume_problem, HasSubstr("not ReadWriteMany"));
  EXPECT_EQ(events_.events().size(), 2u) << "one Warning per problem, not per reconcile";

  client_.objects["persistentvolumeclaims/ml/shared"] = Claim("shared", "ReadWriteMany");
  JobReconcile ok = Creating(ReplicaType::kCoordinator);
  const StepResult result = step_.Run(ok);
  EXPECT_THAT(ok.checkpoint_volume_problem, IsEmpty());
  EXPECT_TRUE(ok.MayCreatePods());
  EXPECT_FALSE(result.requeue_after.has_value());
}

TEST_F(CheckpointVolumeStepTest, TheTemplatesClaimIsCreatedForTheJob) {
  SetJob(kClaimTemplate);
  JobReconcile r = Creating(ReplicaType::kPs);
  step_.Run(r);
  EXPECT_THAT(client_.calls, ElementsAre("get persistentvolumeclaims digits-checkpoint",
                                         "create persistentvolumeclaims"));
  EXPECT_THAT(r.checkpoint_volume_problem, IsEmpty())
      << "a new claim is Pending until a pod needs it";
  EXPECT_TRUE(events_.Has("Normal CreatedCheckpointClaim"));
}

TEST_F(CheckpointVolumeStepTest, AFailureARetryMayFixStopsTheReconcile) {
  SetJob(kNamedClaim);
  client_.fail_calls["get persistentvolumeclaims"] = absl::UnavailableError("down");
  JobReconcile r = Creating(ReplicaType::kPs);
  const StepResult result = step_.Run(r);
  EXPECT_EQ(result.next, StepResult::Next::kStop);
  EXPECT_TRUE(absl::IsUnavailable(result.status));
}

}  // namespace
}  // namespace tj::op::testing
