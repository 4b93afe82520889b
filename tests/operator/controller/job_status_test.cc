// The status the operator writes: conditions that read as a state machine, counts, counters.
#include "operator/controller/job_status.h"
#include "api/v1alpha1/status_json.h"

#include "gtest/gtest.h"

namespace tj::op {
namespace {

using v1alpha1::ConditionStatus;
using v1alpha1::ConditionType;

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);

StatusUpdate U(const std::vector<ObservedPod>* pods, const JobDecision* decision,
               std::optional<int64_t> generation, absl::Time now) {
  StatusUpdate update;
  update.pods = pods;
  update.decision = decision;
  update.generation = generation;
  update.now = now;
  update.job_name = "digits";
  return update;
}

ObservedPod PodOf(ReplicaType type, int index, ReplicaPhase phase, int exit_code = 0) {
  ObservedPod pod;
  pod.key = {type, index};
  pod.phase = phase;
  pod.termination.exit_code = exit_code;
  return pod;
}

JobDecision Decision(JobPhase phase, std::string reason) {
  JobDecision d;
  d.phase = phase;
  d.reason = std::move(reason);
  d.message = "m";
  return d;
}

std::optional<ConditionType> State(const v1alpha1::TrainingJobStatus& status) {
  std::optional<ConditionType> state;
  for (const auto& c : status.conditions) {
    if (c.status == ConditionStatus::kTrue) state = c.type;
  }
  return state;
}

TEST(JobStatusTest, ConditionsFollowThePhasesAndTheLastTrueIsTheState) {
  std::vector<ObservedPod> pods;
  v1alpha1::TrainingJobStatus status;
  JobDecision created = Decision(JobPhase::kCreated, "Created");
  status = NextJobStatus(status, U(&pods, &created, 1, kT0));
  EXPECT_EQ(State(status), ConditionType::kCreated);
  EXPECT_EQ(status.state, "Created");
  EXPECT_EQ(status.worker_selector,
            "trainingjob.dev/job-name=digits,trainingjob.dev/replica-type=worker");
  EXPECT_EQ(status.start_time, kT0);
  EXPECT_EQ(status.observed_generation, 1);

  JobDecision running = Decision(JobPhase::kRunning, "Running");
  status = NextJobStatus(status, U(&pods, &running, 1, kT0 + absl::Seconds(5)));
  EXPECT_EQ(State(status), ConditionType::kRunning);

  JobDecision restarting = Decision(JobPhase::kRestarting, "RestartExitCode");
  restarting.restarts.push_back({{ReplicaType::kCoordinator, 0}, {}});
  restarting.restart_count = 1;
  status = NextJobStatus(status, U(&pods, &restarting, 1, kT0 + absl::Seconds(9)));
  EXPECT_EQ(State(status), ConditionType::kRestarting);
  EXPECT_EQ(status.coordinator_restarts, 1);
  EXPECT_EQ(status.restart_count, 1);
  EXPECT_EQ(status.replica_statuses[ReplicaType::kCoordinator].restarts, 1);
  for (const auto& c : status.conditions) {
    if (c.type == ConditionType::kRunning) {
      EXPECT_EQ(c.status, ConditionStatus::kFalse);
    }
  }

  status = NextJobStatus(status, U(&pods, &running, 1, kT0 + absl::Seconds(20)));
  EXPECT_EQ(State(status), ConditionType::kRunning);
  EXPECT_EQ(status.replica_statuses[ReplicaType::kCoordinator].restarts, 1) << "kept";

  JobDecision succeeded = Decision(JobPhase::kSucceeded, "Succeeded");
  succeeded.restart_count = 1;
  status = NextJobStatus(status, U(&pods, &succeeded, 1, kT0 + absl::Seconds(60)));
  EXPECT_EQ(State(status), ConditionType::kSucceeded);
  EXPECT_EQ(status.completion_time, kT0 + absl::Seconds(60));
  EXPECT_EQ(status.start_time, kT0) << "the start time never moves";
}

TEST(JobStatusTest, SameObservationSameStatus) {
  std::vector<ObservedPod> pods = {PodOf(ReplicaType::kWorker, 0, ReplicaPhase::kRunning)};
  JobDecision running = Decision(JobPhase::kRunning, "Running");
  const auto first = NextJobStatus({}, U(&pods, &running, 3, kT0));
  const auto again = NextJobStatus(first, U(&pods, &running, 3, kT0 + absl::Minutes(1)));
  EXPECT_EQ(first, again) << "an unchanged job must not be written again";
}

TEST(JobStatusTest, ReplicaCountsFromPods) {
  std::vector<ObservedPod> pods = {
      PodOf(ReplicaType::kWorker, 0, ReplicaPhase::kRunning),
      PodOf(ReplicaType::kWorker, 1, ReplicaPhase::kPending),
      PodOf(ReplicaType::kWorker, 2, ReplicaPhase::kTerminated, 0),
      PodOf(ReplicaType::kPs, 0, ReplicaPhase::kTerminated, 137),
  };
  JobDecision running = Decision(JobPhase::kRunning, "Running");
  const auto status = NextJobStatus({}, U(&pods, &running, std::nullopt, kT0));
  EXPECT_EQ(status.replica_statuses.at(ReplicaType::kWorker).active, 2);
  EXPECT_EQ(status.replica_statuses.at(ReplicaType::kWorker).succeeded, 1);
  EXPECT_EQ(status.replica_statuses.at(ReplicaType::kPs).failed, 1);
}

TEST(JobStatusTest, ChangedMessageKeepsTransitionTime) {
  std::vector<v1alpha1::JobCondition> conditions;
  SetJobCondition(conditions, ConditionType::kRunning, ConditionStatus::kTrue, "Running", "a", kT0);
  SetJobCondition(conditions, ConditionType::kRunning, ConditionStatus::kTrue, "Running", "b",
                  kT0 + absl::Seconds(9));
  ASSERT_EQ(conditions.size(), 1u);
  EXPECT_EQ(conditions[0].message, "b");
  EXPECT_EQ(conditions[0].last_transition_time, kT0);
}

TEST(JobStatusTest, UnavailablePodGroupTurnsCreatedFalseUntilItExists) {
  std::vector<ObservedPod> pods;
  JobDecision created = Decision(JobPhase::kCreated, "Created");
  StatusUpdate blocked = U(&pods, &created, 1, kT0);
  blocked.pod_group_problem = "podgroups.scheduling.volcano.sh is not installed";
  v1alpha1::TrainingJobStatus status = NextJobStatus({}, blocked);
  ASSERT_EQ(status.conditions.size(), 1u);
  EXPECT_EQ(status.conditions[0].type, ConditionType::kCreated);
  EXPECT_EQ(status.conditions[0].status, ConditionStatus::kFalse);
  EXPECT_EQ(status.conditions[0].reason, kPodGroupUnavailableReason);
  EXPECT_EQ(status.conditions[0].message, "podgroups.scheduling.volcano.sh is not installed");
  EXPECT_EQ(State(status), std::nullopt);
  EXPECT_EQ(NextJobStatus(status, blocked), status) << "the same problem writes nothing new";

  // Installed: Created True.
  status = NextJobStatus(status, U(&pods, &created, 1, kT0 + absl::Seconds(60)));
  ASSERT_EQ(status.conditions.size(), 1u);
  EXPECT_EQ(status.conditions[0].status, ConditionStatus::kTrue);
  EXPECT_EQ(status.conditions[0].reason, "Created");
  EXPECT_EQ(status.conditions[0].last_transition_time, kT0 + absl::Seconds(60));
  EXPECT_EQ(status.state, "Created");
}

TEST(JobStatusTest, ARunningJobWhosePodGroupCameBackKeepsItsState) {
  std::vector<ObservedPod> pods = {PodOf(ReplicaType::kCoordinator, 0, ReplicaPhase::kRunning)};
  JobDecision running = Decision(JobPhase::kRunning, "Running");
  v1alpha1::TrainingJobStatus status = NextJobStatus({}, U(&pods, &running, 1, kT0));
  ASSERT_EQ(status.state, "Running");
  StatusUpdate blocked = U(&pods, &running, 1, kT0 + absl::Seconds(1));
  blocked.pod_group_problem = "gone";
  status = NextJobStatus(status, blocked);
  EXPECT_EQ(status.conditions[0].type, ConditionType::kCreated);
  EXPECT_EQ(status.conditions[0].status, ConditionStatus::kFalse);
  EXPECT_EQ(status.state, "Running") << "a False Created does not hide the running state";
  status = NextJobStatus(status, U(&pods, &running, 1, kT0 + absl::Seconds(2)));
  EXPECT_EQ(status.conditions[0].type, ConditionType::kCreated) << "Created True again, in place";
  EXPECT_EQ(status.conditions[0].status, ConditionStatus::kTrue);
  EXPECT_EQ(status.state, "Running");
}

TEST(JobStatusTest, PodsRequestedCountAsActiveSoTheirFirstSightingWritesNothing) {
  JobDecision created = Decision(JobPhase::kCreated, "Created");
  created.to_create = {
      {ReplicaType::kCoordinator, 0}, {ReplicaType::kWorker, 0}, {ReplicaType::kWorker, 1}};
  std::vector<ObservedPod> none;
  StatusUpdate first = U(&none, &created, 1, kT0);
  first.requested = created.to_create;
  const v1alpha1::TrainingJobStatus status = NextJobStatus({}, first);
  EXPECT_EQ(status.replica_statuses.at(ReplicaType::kWorker).active, 2);
  EXPECT_EQ(status.replica_statuses.at(ReplicaType::kCoordinator).active, 1);

  // The informers show them Pending: the same status, nothing to write.
  std::vector<ObservedPod> pending = {PodOf(ReplicaType::kCoordinator, 0, ReplicaPhase::kPending),
                                      PodOf(ReplicaType::kWorker, 0, ReplicaPhase::kPending),
                                      PodOf(ReplicaType::kWorker, 1, ReplicaPhase::kPending)};
  JobDecision nothing_to_do = Decision(JobPhase::kCreated, "Created");
  EXPECT_EQ(NextJobStatus(status, U(&pending, &nothing_to_do, 1, kT0 + absl::Seconds(1))), status);
  // Without counting them, the first sighting would have been a second write.
  EXPECT_NE(NextJobStatus(NextJobStatus({}, U(&none, &created, 1, kT0)),
                          U(&pending, &nothing_to_do, 1, kT0 + absl::Seconds(1))),
            NextJobStatus({}, U(&none, &created, 1, kT0)));
}

TEST(JobStatusTest, ARefusedCreateTurnsCreatedFalseUntilACreateSucceeds) {
  std::vector<ObservedPod> pods = {PodOf(ReplicaType::kCoordinator, 0, ReplicaPhase::kRunning)};
  JobDecision running = Decision(JobPhase::kRunning, "Running");
  v1alpha1::TrainingJobStatus status = NextJobStatus({}, U(&pods, &running, 1, kT0));
  StatusUpdate refused = U(&pods, &running, 1, kT0 + absl::Seconds(1));
  refused.create_failure = "creating pod digits-worker-0 failed: exceeded quota";
  status = NextJobStatus(status, refused);
  EXPECT_EQ(status.conditions[0].type, ConditionType::kCreated);
  EXPECT_EQ(status.conditions[0].status, ConditionStatus::kFalse);
  EXPECT_EQ(status.conditions[0].reason, kFailedCreateReason);
  EXPECT_EQ(status.conditions[0].message, refused.create_failure);
  EXPECT_EQ(status.state, "Running");
  // A PodGroup problem says more (no pod is even tried): it wins.
  refused.pod_group_problem = "no PodGroup API";
  EXPECT_EQ(NextJobStatus(status, refused).conditions[0].reason, kPodGroupUnavailableReason);
  status = NextJobStatus(status, U(&pods, &running, 1, kT0 + absl::Seconds(2)));
  EXPECT_EQ(status.conditions[0].status, ConditionStatus::kTrue);
}

}  // namespace
}  // namespace tj::op

namespace tj::op {
namespace {

// Stuck reports beside the phase: it goes first, stays there when it turns True again, and never
// becomes the state or the last condition (the State column).
TEST(JobStatusStuckTest, StuckIsBesideThePhaseNeverTheState) {
  std::vector<ObservedPod> pods;
  JobDecision running = Decision(JobPhase::kRunning, "Running");
  v1alpha1::TrainingJobStatus status = NextJobStatus({}, U(&pods, &running, 1, kT0));
  const StuckJudgement stuck{"Unschedulable", "a pod cannot start: digits-ps-0: Unschedulable",
                             false, std::nullopt};
  StatusUpdate with_stuck = U(&pods, &running, 1, kT0 + absl::Seconds(1));
  with_stuck.stuck = &stuck;
  status = NextJobStatus(status, with_stuck);
  ASSERT_FALSE(status.conditions.empty());
  EXPECT_EQ(status.conditions.front().type, ConditionType::kStuck);
  EXPECT_EQ(status.conditions.front().status, ConditionStatus::kTrue);
  EXPECT_EQ(status.conditions.front().reason, "Unschedulable");
  EXPECT_EQ(status.conditions.back().type, ConditionType::kRunning);
  EXPECT_EQ(status.state, "Running");

  status = NextJobStatus(status, U(&pods, &running, 1, kT0 + absl::Seconds(2)));
  EXPECT_EQ(status.conditions.front().type, ConditionType::kStuck);
  EXPECT_EQ(status.conditions.front().status, ConditionStatus::kFalse);
  EXPECT_EQ(status.conditions.front().reason, "PodsStarted");

  status = NextJobStatus(status, with_stuck);
  EXPECT_EQ(status.conditions.front().type, ConditionType::kStuck) << "True again, in place";
  EXPECT_EQ(status.conditions.front().status, ConditionStatus::kTrue);
  EXPECT_EQ(status.state, "Running");
  EXPECT_EQ(status.conditions.back().type, ConditionType::kRunning);
}

TEST(JobStatusStuckTest, AJobNeverStuckHasNoStuckCondition) {
  std::vector<ObservedPod> pods;
  JobDecision running = Decision(JobPhase::kRunning, "Running");
  v1alpha1::TrainingJobStatus status = NextJobStatus({}, U(&pods, &running, 1, kT0));
  for (const auto& c : status.conditions) EXPECT_NE(c.type, ConditionType::kStuck);
}

// A coordinator's failed save (its report) turns CheckpointFailing True beside the phase with its
// message; the next report without one turns it False; a job whose saves never failed has none.
TEST(JobStatusCheckpointTest, AFailedSaveReportIsBesideThePhaseUntilASaveSucceeds) {
  std::vector<ObservedPod> pods;
  JobDecision running = Decision(JobPhase::kRunning, "Running");
  StatusUpdate fine = U(&pods, &running, 1, kT0);
  fine.checkpoint_error = "";
  fine.last_checkpoint_step = 100;
  v1alpha1::TrainingJobStatus status = NextJobStatus({}, fine);
  for (const auto& c : status.conditions) EXPECT_NE(c.type, ConditionType::kCheckpointFailing);

  StatusUpdate failed = U(&pods, &running, 1, kT0 + absl::Seconds(1));
  failed.checkpoint_error = "credentials from Secret ns/s3 refused for bucket b (PUT s3://b/p/x)";
  status = NextJobStatus(status, failed);
  ASSERT_FALSE(status.conditions.empty());
  const v1alpha1::JobCondition& failing = status.conditions.front();
  EXPECT_EQ(failing.type, ConditionType::kCheckpointFailing);
  EXPECT_EQ(failing.status, ConditionStatus::kTrue);
  EXPECT_EQ(failing.reason, "CheckpointStorageUnavailable");
  EXPECT_EQ(failing.message, *failed.checkpoint_error);
  EXPECT_EQ(status.state, "Running") << "never the state";
  EXPECT_EQ(status.conditions.back().type, ConditionType::kRunning);

  StatusUpdate no_report = U(&pods, &running, 1, kT0 + absl::Seconds(2));
  EXPECT_EQ(NextJobStatus(status, no_report).conditions, status.conditions)
      << "no progress read: kept";

  StatusUpdate saved = U(&pods, &running, 1, kT0 + absl::Seconds(3));
  saved.checkpoint_error = "";
  saved.last_checkpoint_step = 300;
  status = NextJobStatus(status, saved);
  EXPECT_EQ(status.conditions.front().type, ConditionType::kCheckpointFailing);
  EXPECT_EQ(status.conditions.front().status, ConditionStatus::kFalse);
  EXPECT_EQ(status.conditions.front().reason, "CheckpointSaved");
  EXPECT_NE(status.conditions.front().message.find("step 300"), std::string::npos);
  EXPECT_EQ(status.state, "Running");
}

// A new coordinator reports no error before its first save (it restored the checkpoint that was
// already the newest, or has none): CheckpointFailing stays as it was until a save moves
// lastCheckpointStep past the status's.
TEST(JobStatusCheckpointTest, ANewCoordinatorWithoutASaveYetLeavesTheConditionAsItWas) {
  std::vector<ObservedPod> pods;
  JobDecision running = Decision(JobPhase::kRunning, "Running");
  StatusUpdate failed = U(&pods, &running, 1, kT0);
  failed.checkpoint_error = "PUT s3://b/p/ckpt-000000000900/x refused";
  failed.last_checkpoint_step = 800;
  v1alpha1::TrainingJobStatus status = NextJobStatus({}, failed);
  ASSERT_EQ(status.conditions.front().type, ConditionType::kCheckpointFailing);
  ASSERT_EQ(status.conditions.front().status, ConditionStatus::kTrue);

  StatusUpdate restored = U(&pods, &running, 1, kT0 + absl::Seconds(1));
  restored.checkpoint_error = "";
  restored.last_checkpoint_step = 800;  // the restored checkpoint
  status = NextJobStatus(status, restored);
  EXPECT_EQ(status.conditions.front().status, ConditionStatus::kTrue);
  EXPECT_EQ(status.conditions.front().reason, "CheckpointStorageUnavailable");
  EXPECT_EQ(status.conditions.front().message, *failed.checkpoint_error);

  StatusUpdate starting = U(&pods, &running, 1, kT0 + absl::Seconds(2));
  starting.checkpoint_error = "";  // nothing restored yet
  status = NextJobStatus(status, starting);
  EXPECT_EQ(status.conditions.front().status, ConditionStatus::kTrue);

  StatusUpdate saved = U(&pods, &running, 1, kT0 + absl::Seconds(3));
  saved.checkpoint_error = "";
  saved.last_checkpoint_step = 900;
  status = NextJobStatus(status, saved);
  EXPECT_EQ(status.conditions.front().status, ConditionStatus::kFalse);
  EXPECT_EQ(status.conditions.front().reason, "CheckpointSaved");
}

v1alpha1::RunGoodput RunReport(std::string id, double started, double wall, double productive,
                               double at_checkpoint) {
  v1alpha1::RunGoodput run;
  run.run = std::move(id);
  run.started_unix_seconds = started;
  run.seconds.wall = wall;
  run.seconds.productive = productive;
  run.seconds.lost_by(v1alpha1::LostCause::kStartup) = wall - productive;
  run.productive_at_checkpoint = at_checkpoint;
  return run;
}

// status.goodput carries over a coordinator restart: the status holds the account (the operator
// keeps nothing in memory), and a status without one (an older operator's) starts it.
TEST(JobStatusGoodputTest, TotalsCarryAcrossACoordinatorRestartThroughTheStatusAlone) {
  std::vector<ObservedPod> pods = {PodOf(ReplicaType::kWorker, 0, ReplicaPhase::kRunning)};
  JobDecision running = Decision(JobPhase::kRunning, "Running");
  StatusUpdate update = U(&pods, &running, 1, kT0);
  const v1alpha1::TrainingJobStatus none = NextJobStatus({}, update);
  EXPECT_EQ(none.goodput, std::nullopt) << "no coordinator report yet: absent, not 0 or NaN";
  EXPECT_EQ(none.goodput_seconds, std::nullopt);

  update.goodput = RunReport("a", 1000, 100, 90, 50);  // 10 s start-up
  const v1alpha1::TrainingJobStatus first = NextJobStatus(none, update);
  ASSERT_TRUE(first.goodput.has_value());
  EXPECT_DOUBLE_EQ(*first.goodput, 0.9);

  // Round trip through the API server's JSON, as a new operator (leader) would read it.
  v1alpha1::FieldErrors errors;
  const v1alpha1::TrainingJobStatus read = v1alpha1::DecodeTrainingJobStatus(
      v1alpha1::TrainingJobStatusToJson(first), "status", errors);
  ASSERT_TRUE(errors.empty()) << errors.front().field;
  EXPECT_EQ(read, first);

  // Coordinator b starts 20 s after a's last report, restored a's checkpoint (50 productive s).
  v1alpha1::RunGoodput b = RunReport("b", 1120, 30, 25, 0);
  b.seconds.lost_by(v1alpha1::LostCause::kStartup) = 0;
  b.seconds.lost_by(v1alpha1::LostCause::kRestart) = 5;
  update.goodput = b;
  const v1alpha1::TrainingJobStatus second = NextJobStatus(read, update);
  ASSERT_TRUE(second.goodput_seconds.has_value());
  EXPECT_DOUBLE_EQ(second.goodput_seconds->wall, 150);
  EXPECT_DOUBLE_EQ(second.goodput_seconds->productive, 75);
  EXPECT_DOUBLE_EQ(second.goodput_seconds->lost_by(v1alpha1::LostCause::kStepsSinceCheckpoint), 40);
  EXPECT_DOUBLE_EQ(second.goodput_seconds->lost_by(v1alpha1::LostCause::kRestart), 25);
  EXPECT_DOUBLE_EQ(*second.goodput, 0.5);
  // The same report read again (no new progress) changes nothing: no status write.
  EXPECT_EQ(NextJobStatus(second, update), second);
}

}  // namespace
}  // namespace tj::op
