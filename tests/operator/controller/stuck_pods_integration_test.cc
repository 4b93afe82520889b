// Stuck pods against the real API server (fixture: reconciler_integration_fixture.h): nothing
// schedules here, so the test writes what the scheduler and kubelet would (PodScheduled False
// Unschedulable, a container in ImagePullBackOff); what is checked is what the operator writes:
// the Stuck condition, accepted by the CRD's status schema, beside a state that stays the phase;
// one Warning Event; and the job Failed (PendingTimeout) once runPolicy.pendingTimeoutSeconds has
// passed since the pod's creation, with its running pods stopped.
#include <string>

#include "tests/operator/controller/reconciler_integration_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::HasSubstr;

class StuckPodsIntegrationTest : public ReconcilerIntegrationTest {
 protected:
  json StuckCondition() {
    for (const json& c : Conditions()) {
      if (c["type"] == "Stuck") return c;
    }
    return json::object();
  }
  int EventCount(const std::string& text) {
    int n = 0;
    for (const std::string& e : events_.events()) n += e.find(text) != std::string::npos;
    return n;
  }
};

TEST_F(StuckPodsIntegrationTest, AnUnschedulablePsIsReportedThenFailsTheJobAtItsTimeout) {
  CreateJob(6, "pendingTimeoutSeconds: 600");
  Reconcile();
  AllRunning();
  Patch("digits-ps-0",
        {{"phase", "Pending"},
         {"podIP", nullptr},
         {"conditions",
          {{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"},
            {"message", "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity."},
            {"lastTransitionTime", "2027-01-15T08:00:00Z"}}}}});
  now_ += absl::Minutes(1);
  const ReconcileResult stuck = Reconcile();
  ASSERT_TRUE(stuck.requeue_after.has_value());
  EXPECT_LE(*stuck.requeue_after, absl::Minutes(9)) << "comes back at the timeout";

  const json condition = StuckCondition();
  EXPECT_EQ(condition.value("status", ""), "True") << Conditions().dump();
  EXPECT_EQ(condition.value("reason", ""), "Unschedulable");
  EXPECT_THAT(condition.value("message", ""), HasSubstr("digits-ps-0: Unschedulable"));
  EXPECT_EQ(State(), "Running") << "Stuck is beside the phase";
  EXPECT_EQ(Conditions().back().value("type", ""), "Running") << "the State column's condition";
  EXPECT_EQ(EventCount("Warning Unschedulable"), 1);

  Reconcile();
  EXPECT_EQ(EventCount("Warning Unschedulable"), 1) << "reported once while it stays";

  now_ += absl::Minutes(10);
  Reconcile();
  EXPECT_EQ(State(), "Failed");
  json failed;
  for (const json& c : Conditions()) {
    if (c["type"] == "Failed") failed = c;
  }
  EXPECT_EQ(failed.value("reason", ""), "PendingTimeout");
  EXPECT_THAT(failed.value("message", ""), HasSubstr("pendingTimeoutSeconds (600)"));
  EXPECT_TRUE(Pods().empty()) << "cleanPodPolicy Running stops the pods left";
}

TEST_F(StuckPodsIntegrationTest, AnImageThatCannotBePulledIsStuckUntilItIsPulled) {
  CreateJob();
  Reconcile();
  AllRunning();
  Patch("digits-worker-1",
        {{"phase", "Pending"},
         {"containerStatuses",
          {{{"name", "trainer"}, {"image", "trainingjob/runtime:typo"}, {"imageID", ""},
            {"ready", false}, {"restartCount", 0},
            {"state",
             {{"waiting",
               {{"reason", "ImagePullBackOff"},
                {"message", "Back-off pulling image \"trainingjob/runtime:typo\""}}}}}}}}});
  Reconcile();
  EXPECT_EQ(StuckCondition().value("reason", ""), "ImagePullBackOff") << Conditions().dump();
  EXPECT_EQ(EventCount("Warning ImagePullBackOff"), 1);

  SetRunning("digits-worker-1");
  Reconcile();
  EXPECT_EQ(StuckCondition().value("status", ""), "False");
  EXPECT_EQ(StuckCondition().value("reason", ""), "PodsStarted");
  EXPECT_EQ(State(), "Running");
}

}  // namespace
}  // namespace tj::op::testing

namespace tj::op::testing {
namespace {

// The control plane's own kube-scheduler, with no node to offer, marks the pods Unschedulable; the
// operator reports it as it comes.
TEST_F(StuckPodsIntegrationTest, TheRealSchedulersUnschedulableIsReported) {
  scheduler_name_ = "default-scheduler";
  CreateJob();
  Reconcile();
  ASSERT_TRUE(testing::WaitFor([&] {
    Reconcile();
    return StuckCondition().value("reason", "") == "Unschedulable";
  })) << Conditions().dump();
  EXPECT_THAT(StuckCondition().value("message", ""), HasSubstr("digits-coordinator-0: Unschedulable"));
  EXPECT_EQ(State(), "Created") << "Stuck is beside the phase";
  EXPECT_GE(EventCount("Warning Unschedulable"), 1);
}

}  // namespace
}  // namespace tj::op::testing
