// ServicesStep over fakes: the Services the job lacks are queued (those it has are not), the
// Services of replicas it no longer has are deleted at once, and one not controlled by the job
// is neither counted as the job's nor deleted.
#include "operator/controller/reconciler_services.h"

#include "tests/operator/controller/reconcile_step_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::ElementsAre;

class ServicesStepTest : public StepTest {
 protected:
  void SetUp() override { SetJob(); }
  nlohmann::json Service(ReplicaKey key) {
    nlohmann::json service = BuildReplicaService(Job(), key);
    service["metadata"]["namespace"] = "ml";
    return service;
  }
  ServicesStep step_{view_, client_};
};

TEST_F(ServicesStepTest, QueuesTheMissingDeletesTheScaledAwayAndKeepsTheRest) {
  view_.services = {Service({ReplicaType::kPs, 0}), Service({ReplicaType::kWorker, 2})};
  JobReconcile r = Reconcile();
  EXPECT_EQ(step_.Run(r).next, StepResult::Next::kContinue);
  EXPECT_THAT(Queued(r), ElementsAre("services/digits-coordinator-0", "services/digits-worker-0",
                                     "services/digits-worker-1"));
  for (const Write& w : r.writes) {
    EXPECT_EQ(w.kind, WriteKind::kService);
    EXPECT_FALSE(w.urgent) << "Services wait behind every job's pods";
  }
  EXPECT_THAT(client_.calls, ElementsAre("delete services digits-worker-2"));
}

TEST_F(ServicesStepTest, AServiceTheJobDoesNotControlIsNeitherKeptNorDeleted) {
  nlohmann::json foreign = Service({ReplicaType::kPs, 0});
  foreign["metadata"].erase("ownerReferences");
  view_.services = {foreign};
  JobReconcile r = Reconcile();
  step_.Run(r);
  EXPECT_EQ(r.writes.size(), 4u) << "its create will answer AlreadyExists";
  EXPECT_TRUE(client_.calls.empty());
}

TEST_F(ServicesStepTest, AFailedDeleteStopsTheReconcile) {
  view_.services = {Service({ReplicaType::kWorker, 5})};
  client_.fail_calls["delete services"] = absl::UnavailableError("down");
  JobReconcile r = Reconcile();
  const StepResult result = step_.Run(r);
  EXPECT_EQ(result.next, StepResult::Next::kStop);
  EXPECT_TRUE(absl::IsUnavailable(result.status)) << result.status;
}

TEST_F(ServicesStepTest, AQueuedCreateBuildsTheReplicasHeadlessService) {
  JobReconcile r = Reconcile();
  step_.Run(r);
  ASSERT_FALSE(r.writes.empty());
  ASSERT_TRUE(r.writes[0].call().ok());
  EXPECT_THAT(client_.calls, ElementsAre("create services"));
  EXPECT_EQ(client_.bodies[0]["metadata"]["name"], "digits-coordinator-0");
  EXPECT_EQ(client_.bodies[0]["spec"]["clusterIP"], "None");
}

}  // namespace
}  // namespace tj::op::testing
