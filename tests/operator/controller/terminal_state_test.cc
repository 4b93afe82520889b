// A finished job stays finished (issue 18, item 6), over the whole Reconciler and fakes: once its
// status says Succeeded or Failed, no late pod event (a coordinator that exits 0 after the job
// failed, a worker that fails after it succeeded, a pod turning Running), no change to its spec
// (resumed, scaled, made invalid), no operator restart and no clean-up of its pods creates a pod
// or writes a different phase. The integration test's "finished stays finished" and the e2e
// scenarios prove the same against a real API server for the common case.
#include <string>

#include "operator/controller/reconciler.h"
#include "tests/operator/controller/reconcile_step_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::Contains;
using ::testing::Each;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

nlohmann::json Finished(const std::string& type, const std::string& reason) {
  return {{"state", type},
          {"startTime", "2027-01-15T07:00:00Z"},
          {"completionTime", "2027-01-15T08:00:00Z"},
          {"restartCount", 3},
          {"conditions",
           {{{"type", "Running"},
             {"status", "False"},
             {"reason", reason},
             {"lastTransitionTime", "2027-01-15T08:00:00Z"}},
            {{"type", type},
             {"status", "True"},
             {"reason", reason},
             {"lastTransitionTime", "2027-01-15T08:00:00Z"}}}}};
}

nlohmann::json Failed() { return Finished("Failed", "BackoffLimitExceeded"); }
nlohmann::json Succeeded() { return Finished("Succeeded", "Succeeded"); }

class TerminalStateTest : public StepTest {
 protected:
  ReconcileResult ReconcileWithANewReconciler() {
    options_.clock = [this] { return now_; };
    Reconciler reconciler(view_, client_, notifier_, events_, options_);
    return reconciler.Reconcile("ml/digits");
  }
  // Creates nothing and writes no status: the only writes left are pod deletions.
  void ExpectOnlyCleanUp() {
    EXPECT_THAT(client_.calls, Each(StartsWith("delete pods")))
        << ::testing::PrintToString(client_.calls);
    EXPECT_THAT(notifier_.notices(), IsEmpty()) << "no preemption notice for a finished job";
  }
  ReplicaKey Coordinator() const { return {ReplicaType::kCoordinator, 0}; }
  ReplicaKey Worker(int i) const { return {ReplicaType::kWorker, i}; }
};

TEST_F(TerminalStateTest, AFailedJobIsNotRevivedByACoordinatorThatExitsZeroLater) {
  SetJob("  runPolicy: {cleanPodPolicy: None}\n", 2, Failed());
  view_.pods = {Pod(Coordinator(), 0), Pod({ReplicaType::kPs, 0}), Pod(Worker(0), 1),
                Pod(Worker(1))};
  const ReconcileResult result = ReconcileWithANewReconciler();
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_THAT(client_.calls, IsEmpty()) << "Failed stays Failed, not Succeeded";
  ExpectOnlyCleanUp();
}

TEST_F(TerminalStateTest, ASucceededJobIsNotFailedByAWorkerThatFailsLater) {
  SetJob("", 2, Succeeded());
  view_.pods = {Pod(Coordinator(), 0), Pod(Worker(0), 1), Pod(Worker(1), 137)};
  const ReconcileResult result = ReconcileWithANewReconciler();
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_THAT(client_.calls, IsEmpty()) << "ended pods are kept for their logs; nothing restarts";
  ExpectOnlyCleanUp();
}

TEST_F(TerminalStateTest, PodsStillRunningAreStoppedAndNoneIsReplaced) {
  SetJob("", 2, Failed());
  AllRunning();
  const ReconcileResult first = ReconcileWithANewReconciler();
  ASSERT_TRUE(first.status.ok()) << first.status;
  EXPECT_THAT(client_.calls, Contains("delete pods digits-ps-0"));
  ExpectOnlyCleanUp();

  // The deletions done: every pod is gone, which for a running job would mean "create them all".
  view_.pods.clear();
  client_.calls.clear();
  const ReconcileResult second = ReconcileWithANewReconciler();
  ASSERT_TRUE(second.status.ok()) << second.status;
  EXPECT_THAT(client_.calls, IsEmpty()) << "a cleaned-up job is not recreated";
}

TEST_F(TerminalStateTest, AnOperatorRestartFindsTheJobFinishedAndLeavesIt) {
  SetJob("  runPolicy: {cleanPodPolicy: All}\n", 2, Succeeded());
  for (int restart = 0; restart < 3; ++restart) {
    const ReconcileResult result = ReconcileWithANewReconciler();
    ASSERT_TRUE(result.status.ok()) << result.status;
  }
  EXPECT_THAT(client_.calls, IsEmpty()) << "no pod, Secret, Service or status write";
  EXPECT_THAT(events_.events(), IsEmpty());
}

TEST_F(TerminalStateTest, ASpecChangedAfterTheEndChangesNothing) {
  // Resumed from suspension, scaled to five workers, with a new generation.
  SetJob("  runPolicy: {suspend: false}\n", 5, Failed());
  job_json_["metadata"]["generation"] = 2;
  view_.jobs["ml/digits"] = job_json_;
  const ReconcileResult result = ReconcileWithANewReconciler();
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_THAT(client_.calls, IsEmpty());
}

TEST_F(TerminalStateTest, ASpecMadeInvalidAfterTheEndKeepsTheReasonItEndedWith) {
  SetJob("", /*workers=*/-1, Succeeded());
  const ReconcileResult result = ReconcileWithANewReconciler();
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_THAT(client_.calls, Not(Contains("update trainingjobs/status digits")))
      << "not rewritten as Failed (InvalidSpec)";
  EXPECT_FALSE(events_.Has("Warning InvalidSpec"));
}

}  // namespace
}  // namespace tj::op::testing
