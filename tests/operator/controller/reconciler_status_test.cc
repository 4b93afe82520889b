// StatusStep over fakes: a first reconcile's status is queued after the creates (the requested
// pods counted active) and written now only otherwise; a refused write stops the reconcile
// before anything is acted on; an unchanged status is not written; the phase Event; the
// activeDeadlineSeconds and progress requeues.
#include "operator/controller/reconciler_status.h"

#include "api/v1alpha1/status_json.h"
#include "tests/operator/controller/reconcile_step_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class StatusStepTest : public StepTest {
 protected:
  JobReconcile Deciding(JobPhase phase) {
    JobReconcile r = Reconcile();
    r.decision.phase = phase;
    r.decision.reason = std::string(JobPhaseName(phase));
    r.decision.message = "because";
    return r;
  }
  // A job past its first reconcile: its status holds the Created condition.
  void SetCreatedJob() {
    SetJob("", 2, {{"conditions", {{{"type", "Created"}, {"status", "True"},
                                    {"reason", "Created"},
                                    {"lastTransitionTime", "2027-01-15T08:00:00Z"}}}}});
  }
  StatusStep step_{client_, events_, options_};
};

TEST_F(StatusStepTest, AFirstReconcileQueuesItsStatusAfterTheCreatesCountingThemActive) {
  SetJob();
  JobReconcile r = Deciding(JobPhase::kCreated);
  r.decision.to_create = {{ReplicaType::kCoordinator, 0}, {ReplicaType::kWorker, 0}};
  EXPECT_EQ(step_.Run(r).next, StepResult::Next::kContinue);
  EXPECT_TRUE(r.first_reconcile);
  EXPECT_THAT(client_.calls, IsEmpty()) << "written after the creates, on the executor";
  ASSERT_THAT(Queued(r), ElementsAre("status"));
  EXPECT_EQ(r.writes[0].kind, WriteKind::kStatus);
  EXPECT_THAT(events_.events(), IsEmpty()) << "the one Created Event of the writes says it";

  ASSERT_TRUE(r.writes[0].call().ok());
  EXPECT_THAT(client_.calls, ElementsAre("update trainingjobs/status digits"));
  const nlohmann::json& status = client_.bodies[0]["status"];
  EXPECT_EQ(status["replicaStatuses"]["Worker"]["active"], 1);
  EXPECT_EQ(status["replicaStatuses"]["Coordinator"]["active"], 1);
  EXPECT_EQ(status["state"], "Created");
}

TEST_F(StatusStepTest, HeldPodsAreNotCountedAsRequested) {
  SetJob();
  JobReconcile r = Deciding(JobPhase::kCreated);
  r.decision.to_create = {{ReplicaType::kCoordinator, 0}};
  r.pod_group_problem = "no PodGroup";
  step_.Run(r);
  ASSERT_TRUE(r.writes[0].call().ok());
  EXPECT_FALSE(client_.bodies[0]["status"].contains("replicaStatuses") &&
               client_.bodies[0]["status"]["replicaStatuses"].contains("Coordinator"));
}

TEST_F(StatusStepTest, ALaterChangeIsWrittenBeforeAnythingIsDoneAndAConflictStops) {
  SetCreatedJob();
  AllRunning();
  JobReconcile r = Deciding(JobPhase::kRunning);
  EXPECT_EQ(step_.Run(r).next, StepResult::Next::kContinue);
  EXPECT_FALSE(r.first_reconcile);
  EXPECT_THAT(client_.calls, ElementsAre("update trainingjobs/status digits"));
  EXPECT_TRUE(r.writes.empty());
  EXPECT_THAT(events_.events(), ElementsAre("Normal Running: because"));

  client_.fail_calls["update trainingjobs"] = absl::AbortedError("conflict");
  JobReconcile stale = Deciding(JobPhase::kRunning);
  const StepResult result = step_.Run(stale);
  EXPECT_EQ(result.next, StepResult::Next::kStop);
  EXPECT_EQ(result.status.code(), absl::StatusCode::kAborted);
}

TEST_F(StatusStepTest, AnUnchangedStatusIsNotWritten) {
  SetCreatedJob();
  AllRunning();
  JobReconcile r = Deciding(JobPhase::kRunning);
  step_.Run(r);
  ASSERT_THAT(client_.calls, ElementsAre("update trainingjobs/status digits"));
  SetJob("", 2, client_.bodies[0]["status"]);
  client_.calls.clear();
  JobReconcile again = Deciding(JobPhase::kRunning);
  step_.Run(again);
  EXPECT_THAT(client_.calls, IsEmpty());
}

TEST_F(StatusStepTest, ComesBackAtTheActiveDeadlineAndForProgressWhileRunning) {
  SetJob("  runPolicy: {activeDeadlineSeconds: 600}\n", 2,
         {{"startTime", "2027-01-15T08:00:00Z"},
          {"conditions", {{{"type", "Created"}, {"status", "True"}, {"reason", "Created"},
                           {"lastTransitionTime", "2027-01-15T08:00:00Z"}}}}});
  now_ = absl::FromCivil(absl::CivilSecond(2027, 1, 15, 8, 9, 0), absl::UTCTimeZone());
  JobReconcile r = Deciding(JobPhase::kCreated);
  EXPECT_EQ(step_.Run(r).requeue_after, absl::Seconds(60));

  FixedProgress progress;
  options_.progress = &progress;
  JobReconcile running = Deciding(JobPhase::kRunning);
  EXPECT_EQ(step_.Run(running).requeue_after, absl::Seconds(30)) << "progress_interval, sooner";
}

// A coordinator reporting a failed save: CheckpointFailing True with its message, the access key
// ID masked, and one Warning naming it; the next report without one clears it with a Normal Event.
TEST_F(StatusStepTest, AFailedSaveTheCoordinatorReportsIsAWarningAndAConditionUntilASaveSucceeds) {
  SetCreatedJob();
  AllRunning();
  FixedProgress progress;
  options_.progress = &progress;
  progress.Set(250, 200, "credentials from Secret default/s3 (access key AKIAEXAMPLE1234) "
                         "refused for bucket tj-ckpt (PUT s3://tj-ckpt/jobs/digits/ckpt-300/"
                         "WRITER_GENERATION at http://s3:8333: HTTP 403 AccessDenied)");
  JobReconcile r = Deciding(JobPhase::kRunning);
  step_.Run(r);
  ASSERT_THAT(client_.calls, ElementsAre("update trainingjobs/status digits"));
  const nlohmann::json status = client_.bodies[0]["status"];
  const std::string written = status.dump();
  EXPECT_EQ(written.find("AKIAEXAMPLE1234"), std::string::npos) << written;
  const nlohmann::json& failing = status["conditions"][0];
  EXPECT_EQ(failing["type"], "CheckpointFailing");
  EXPECT_EQ(failing["status"], "True");
  EXPECT_EQ(failing["message"],
            "credentials from Secret default/s3 (access key ****1234) refused for bucket tj-ckpt "
            "(PUT s3://tj-ckpt/jobs/digits/ckpt-300/WRITER_GENERATION at http://s3:8333: HTTP "
            "403 AccessDenied)");
  EXPECT_EQ(status["state"], "Running");
  EXPECT_THAT(events_.events(),
              ElementsAre("Normal Running: because",
                          "Warning CheckpointStorageUnavailable: " +
                              failing["message"].get<std::string>()));

  // The same report again: nothing new.
  SetJob("", 2, status);
  client_.calls.clear();
  JobReconcile again = Deciding(JobPhase::kRunning);
  step_.Run(again);
  EXPECT_THAT(client_.calls, IsEmpty());
  EXPECT_EQ(events_.events().size(), 2u);

  // A save succeeded: the coordinator's report has no error any more.
  progress.Set(420, 400);
  JobReconcile saved = Deciding(JobPhase::kRunning);
  step_.Run(saved);
  ASSERT_THAT(client_.calls, ElementsAre("update trainingjobs/status digits"));
  EXPECT_EQ(client_.bodies.back()["status"]["conditions"][0]["status"], "False");
  EXPECT_EQ(client_.bodies.back()["status"]["conditions"][0]["reason"], "CheckpointSaved");
  EXPECT_EQ(events_.events().back(),
            "Normal CheckpointSaved: the coordinator reports no failed save; the newest "
            "checkpoint is step 400");
}

// A coordinator nothing has been read from yet is read every short_progress_interval in its pod's
// first 5 minutes (its server may have come up just after the look that saw it Running); after
// that, or once a read succeeded, every progress_interval.
TEST_F(StatusStepTest, ANewCoordinatorIsReadSoonerUntilAFirstReadInItsFirstMinutes) {
  SetCreatedJob();
  FixedProgress progress;
  options_.progress = &progress;
  auto created = [&](absl::Duration ago) {
    view_.pods.clear();
    AllRunning();
    for (nlohmann::json& pod : view_.pods) {
      pod["metadata"]["creationTimestamp"] = v1alpha1::FormatKubernetesTime(now_ - ago);
    }
  };
  created(absl::Seconds(10));
  JobReconcile fresh = Deciding(JobPhase::kRunning);
  EXPECT_EQ(step_.Run(fresh).requeue_after, absl::Seconds(5)) << "nothing read yet";
  created(absl::Minutes(6));
  JobReconcile old = Deciding(JobPhase::kRunning);
  EXPECT_EQ(step_.Run(old).requeue_after, absl::Seconds(30)) << "no progress service, it seems";
  created(absl::Seconds(10));
  progress.Set(10, -1);
  JobReconcile read = Deciding(JobPhase::kRunning);
  EXPECT_EQ(step_.Run(read).requeue_after, absl::Seconds(30)) << "read once";
}

// While a failed save is reported, progress is read every short_progress_interval,
// not every progress_interval: the save that clears it is seen before a short job ends. Once a
// save clears it, the usual interval again.
TEST_F(StatusStepTest, AFailingCheckpointIsReadAgainSoonerUntilItClears) {
  SetCreatedJob();
  AllRunning();
  FixedProgress progress;
  options_.progress = &progress;
  progress.Set(250, 200, "PUT s3://tj-ckpt/jobs/digits/ckpt-300/MANIFEST.json refused");
  JobReconcile failing = Deciding(JobPhase::kRunning);
  EXPECT_EQ(step_.Run(failing).requeue_after, absl::Seconds(5));

  SetJob("", 2, client_.bodies.back()["status"]);
  progress.Set(420, 400);
  JobReconcile saved = Deciding(JobPhase::kRunning);
  EXPECT_EQ(step_.Run(saved).requeue_after, absl::Seconds(30));
  EXPECT_EQ(client_.bodies.back()["status"]["conditions"][0]["status"], "False");
}

}  // namespace
}  // namespace tj::op::testing
