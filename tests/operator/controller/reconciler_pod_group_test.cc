// PodGroupStep over fakes: what each answer of the API server makes of the job (table), the
// PodGroup's fields patched back, an unchanged job costing no request, the Warning once per
// problem and the retry interval.
#include "operator/controller/reconciler_pod_group.h"

#include "operator/controller/pod_group.h"
#include "tests/operator/controller/reconcile_step_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class PodGroupStepTest : public StepTest {
 protected:
  void SetUp() override { SetJob(); }
  // A reconcile about to create the job's pods.
  JobReconcile Creating() {
    JobReconcile r = Reconcile();
    r.decision.to_create = {{ReplicaType::kCoordinator, 0}};
    return r;
  }
  PodGroupStep step_{client_, events_, GangScheduler::kVolcano, absl::Minutes(1)};
};

TEST_F(PodGroupStepTest, WithoutAGangSchedulerNothingIsAsked) {
  PodGroupStep none(client_, events_, GangScheduler::kNone, absl::Minutes(1));
  JobReconcile r = Creating();
  const StepResult result = none.Run(r);
  EXPECT_EQ(result.next, StepResult::Next::kContinue);
  EXPECT_FALSE(result.requeue_after.has_value());
  EXPECT_THAT(client_.calls, IsEmpty());
}

TEST_F(PodGroupStepTest, EachAnswerOfTheApiServerHoldsOrLetsThePodsGo) {
  struct Case {
    std::string name;
    absl::Status get;
    absl::Status create;
    bool owned_exists;  // a PodGroup of the job's name exists (get answers it)
    std::string problem;  // substring; "" for none
    bool error;
  };
  const std::vector<Case> cases = {
      {"created", absl::NotFoundError("no"), absl::OkStatus(), false, "", false},
      {"CRD missing", absl::NotFoundError("no"), absl::NotFoundError("no"), false,
       "podgroups.scheduling.volcano.sh is not installed", false},
      {"create forbidden", absl::NotFoundError("no"), absl::PermissionDeniedError("rbac"), false,
       "its RBAC must grant podgroups get, create and patch", false},
      {"get forbidden", absl::PermissionDeniedError("rbac"), absl::OkStatus(), false,
       "the operator may not use podgroups.scheduling.volcano.sh", false},
      {"made meanwhile", absl::NotFoundError("no"), absl::AlreadyExistsError("yes"), false, "",
       false},
      {"API down", absl::UnavailableError("down"), absl::OkStatus(), false, "", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RecordingKubeClient client;
    if (!c.get.ok()) client.fail_calls["get podgroups"] = c.get;
    if (!c.create.ok()) client.fail_calls["create podgroups"] = c.create;
    PodGroupStep step(client, events_, GangScheduler::kVolcano, absl::Minutes(1));
    JobReconcile r = Creating();
    const StepResult result = step.Run(r);
    if (c.error) {
      EXPECT_EQ(result.next, StepResult::Next::kStop);
      EXPECT_EQ(result.status, c.get);
      continue;
    }
    EXPECT_TRUE(result.status.ok()) << result.status;
    EXPECT_EQ(result.next, StepResult::Next::kContinue);
    if (c.problem.empty()) {
      EXPECT_THAT(r.pod_group_problem, IsEmpty());
      EXPECT_TRUE(r.MayCreatePods());
      EXPECT_FALSE(result.requeue_after.has_value());
    } else {
      EXPECT_THAT(r.pod_group_problem, HasSubstr(c.problem));
      EXPECT_FALSE(r.MayCreatePods());
      EXPECT_EQ(result.requeue_after, absl::Minutes(1)) << "nothing watches for the CRD";
    }
  }
}

TEST_F(PodGroupStepTest, AProblemIsOneWarningHoweverOftenItIsSeen) {
  client_.fail_calls["create podgroups"] = absl::NotFoundError("no");
  for (int i = 0; i < 3; ++i) {
    JobReconcile r = Creating();
    step_.Run(r);
  }
  int warnings = 0;
  for (const std::string& e : events_.events()) warnings += e.starts_with("Warning PodGroupUnavailable");
  EXPECT_EQ(warnings, 1);
}

TEST_F(PodGroupStepTest, ThePoliciesFieldsArePatchedBackAndAnUnchangedJobCostsNothing) {
  nlohmann::json existing = BuildPodGroup(Job(), GangScheduler::kVolcano);
  existing["spec"]["minMember"] = 1;
  existing["spec"]["minResources"] = {{"cpu", "2"}};  // the scheduler's, left alone
  client_.objects["podgroups/ml/digits"] = existing;
  JobReconcile r = Creating();
  step_.Run(r);
  EXPECT_THAT(client_.calls, ElementsAre("get podgroups digits", "patch podgroups digits"));
  EXPECT_EQ(client_.bodies[0], (nlohmann::json{{"spec", {{"minMember", 4}}}}));

  client_.objects["podgroups/ml/digits"]["spec"]["minMember"] = 4;  // the patch, applied
  client_.calls.clear();
  JobReconcile unchanged = Reconcile();  // no pod to create, the PodGroup as last confirmed
  step_.Run(unchanged);
  EXPECT_THAT(client_.calls, IsEmpty());
  JobReconcile creating = Creating();
  step_.Run(creating);
  EXPECT_THAT(client_.calls, ElementsAre("get podgroups digits"))
      << "before pods are made it is looked at again (it may have been deleted by hand)";
}

TEST_F(PodGroupStepTest, APodGroupOfThatNameNotTheJobsHoldsThePods) {
  nlohmann::json foreign = BuildPodGroup(Job(), GangScheduler::kVolcano);
  foreign["metadata"].erase("ownerReferences");
  client_.objects["podgroups/ml/digits"] = foreign;
  JobReconcile r = Creating();
  step_.Run(r);
  EXPECT_THAT(r.pod_group_problem, HasSubstr("is not controlled by this TrainingJob"));
}

}  // namespace
}  // namespace tj::op::testing
