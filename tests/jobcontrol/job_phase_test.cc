// The job phase table: what is observed of each replica -> phase and actions. Kubeflow TFJob's
// known failures are named cases (Kubeflow*).
#include "jobcontrol/job_phase.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tests/jobcontrol/test_jobs.h"

namespace tj {
namespace {

using ::testing::HasSubstr;
using v1alpha1::CleanPodPolicy;
using v1alpha1::RestartPolicy;

constexpr ReplicaKey kCoord{ReplicaType::kCoordinator, 0};
constexpr ReplicaKey kPs0{ReplicaType::kPs, 0};
constexpr ReplicaKey kW0{ReplicaType::kWorker, 0};
constexpr ReplicaKey kW1{ReplicaType::kWorker, 1};
constexpr ReplicaKey kW2{ReplicaType::kWorker, 2};

ReplicaObservation Running(ReplicaKey key) { return {key, ReplicaPhase::kRunning, {}}; }
ReplicaObservation Pending(ReplicaKey key) { return {key, ReplicaPhase::kPending, {}}; }
ReplicaObservation Ended(ReplicaKey key, int code, bool oom = false, bool disrupted = false) {
  ReplicaObservation r{key, ReplicaPhase::kTerminated, {}};
  r.termination.exit_code = code;
  r.termination.oom_killed = oom;
  r.termination.disrupted = disrupted;
  return r;
}

std::vector<ReplicaObservation> AllRunning() {
  return {Running(kCoord), Running(kPs0), Running(kW0), Running(kW1)};
}

// "worker 1" etc., for readable expectations.
std::vector<std::string> Names(const std::vector<ReplicaKey>& keys) {
  std::vector<std::string> out;
  for (const ReplicaKey& k : keys) out.push_back(DescribeReplica(k));
  return out;
}

struct Case {
  std::string name;
  std::function<void(v1alpha1::TrainingJob&)> configure;  // the job: 1 coordinator, 1 PS, 2 workers
  std::vector<ReplicaObservation> observed;
  int32_t restarts_so_far;
  JobPhase phase;
  std::string reason;
  std::vector<std::string> to_create;
  std::vector<std::string> to_restart;
  std::vector<std::string> to_stop;
  int32_t restart_count;
  std::optional<absl::Duration> active_for = std::nullopt;
};

void NoChange(v1alpha1::TrainingJob&) {}

std::vector<Case> Cases() {
  return {
      {"AllRunning", NoChange, AllRunning(), 0, JobPhase::kRunning, "Running", {}, {}, {}, 0},
      {"NothingCreatedYet",
       NoChange,
       {},
       0,
       JobPhase::kCreated,
       "Created",
       {"coordinator 0", "ps 0", "worker 0", "worker 1"},
       {},
       {},
       0},
      {"CoordinatorPending",
       NoChange,
       {Pending(kCoord), Running(kPs0), Running(kW0), Pending(kW1)},
       0,
       JobPhase::kCreated,
       "Created",
       {},
       {},
       {},
       0},
      {"KubeflowPsLeftRunningAfterSuccess",
       NoChange,
       {Ended(kCoord, 0), Running(kPs0), Running(kW0), Pending(kW1)},
       0,
       JobPhase::kSucceeded,
       "Succeeded",
       {},
       {},
       {"ps 0", "worker 0", "worker 1"},
       0},
      {"SuccessCleanPodPolicyAll",
       [](v1alpha1::TrainingJob& j) { j.spec.run_policy.clean_pod_policy = CleanPodPolicy::kAll; },
       {Ended(kCoord, 0), Running(kPs0), Ended(kW0, 0), Running(kW1)},
       0,
       JobPhase::kSucceeded,
       "Succeeded",
       {},
       {},
       {"coordinator 0", "ps 0", "worker 0", "worker 1"},
       0},
      {"SuccessCleanPodPolicyNone",
       [](v1alpha1::TrainingJob& j) { j.spec.run_policy.clean_pod_policy = CleanPodPolicy::kNone; },
       {Ended(kCoord, 0), Running(kPs0), Running(kW0), Running(kW1)},
       0,
       JobPhase::kSucceeded,
       "Succeeded",
       {},
       {},
       {},
       0},
      {"SuccessWinsOverAWorkerFailingAtTheEnd",
       NoChange,
       {Ended(kCoord, 0), Running(kPs0), Ended(kW0, 1), Running(kW1)},
       0,
       JobPhase::kSucceeded,
       "Succeeded",
       {},
       {},
       {"ps 0", "worker 1"},
       0},
      {"SuccessUnderAlwaysPolicy",
       [](v1alpha1::TrainingJob& j) {
         for (auto& [t, r] : j.spec.replica_specs) r.restart_policy = RestartPolicy::kAlways;
       },
       {Ended(kCoord, 0), Running(kPs0), Running(kW0), Running(kW1)},
       0,
       JobPhase::kSucceeded,
       "Succeeded",
       {},
       {},
       {"ps 0", "worker 0", "worker 1"},
       0},
      {"WorkerKilledIsRestarted",
       NoChange,
       {Running(kCoord), Running(kPs0), Running(kW0), Ended(kW1, 137)},
       2,
       JobPhase::kRestarting,
       "Signal",
       {},
       {"worker 1"},
       {},
       3},
      {"CoordinatorRestartExitCodeAfterPsLoss",
       NoChange,
       {Ended(kCoord, 42), Ended(kPs0, 137), Running(kW0), Running(kW1)},
       0,
       JobPhase::kRestarting,
       "RestartExitCode",
       {},
       {"coordinator 0", "ps 0"},
       {},
       2},
      {"DisruptedPsRestartsWithoutCounting",
       NoChange,
       {Running(kCoord), Ended(kPs0, 143, false, true), Running(kW0), Running(kW1)},
       6,
       JobPhase::kRestarting,
       "Disrupted",
       {},
       {"ps 0"},
       {},
       6},
      {"KubeflowBackoffLimitIgnoredUnderExitCode",
       [](v1alpha1::TrainingJob& j) { j.spec.run_policy.backoff_limit = 1; },
       {Running(kCoord), Running(kPs0), Ended(kW0, 137), Ended(kW1, 137)},
       0,
       JobPhase::kFailed,
       "BackoffLimitExceeded",
       {},
       {},
       {"coordinator 0", "ps 0"},
       1},
      {"OomKilledWorkerFailsAtTheLimit",
       NoChange,
       {Running(kCoord), Running(kPs0), Running(kW0), Ended(kW1, 137, true)},
       6,
       JobPhase::kFailed,
       "BackoffLimitExceeded",
       {},
       {},
       {"coordinator 0", "ps 0", "worker 0"},
       6},
      {"PermanentWorkerFailureFailsTheJob",
       NoChange,
       {Running(kCoord), Running(kPs0), Running(kW0), Ended(kW1, 1)},
       0,
       JobPhase::kFailed,
       "PermanentExitCode",
       {},
       {},
       {"coordinator 0", "ps 0", "worker 0"},
       0},
      {"CoordinatorCrashFailsTheJob",
       NoChange,
       {Ended(kCoord, 139), Running(kPs0), Running(kW0), Running(kW1)},
       0,
       JobPhase::kFailed,
       "PermanentExitCode",
       {},
       {},
       {"ps 0", "worker 0", "worker 1"},
       0},
      {"NeverPolicyWorkerFailure",
       [](v1alpha1::TrainingJob& j) {
         j.spec.replica_specs[ReplicaType::kWorker].restart_policy = RestartPolicy::kNever;
       },
       {Running(kCoord), Running(kPs0), Ended(kW0, 143), Running(kW1)},
       0,
       JobPhase::kFailed,
       "RestartPolicyNever",
       {},
       {},
       {"coordinator 0", "ps 0", "worker 1"},
       0},
      {"WorkerCompletedStaysCompleted",
       [](v1alpha1::TrainingJob& j) {
         j.spec.replica_specs[ReplicaType::kWorker].restart_policy = RestartPolicy::kOnFailure;
       },
       {Running(kCoord), Running(kPs0), Ended(kW0, 0), Running(kW1)},
       0,
       JobPhase::kRunning,
       "Running",
       {},
       {},
       {},
       0},
      {"DeletedWorkerIsCreatedAgain",
       NoChange,
       {Running(kCoord), Running(kPs0), Running(kW0)},
       0,
       JobPhase::kRunning,
       "Running",
       {"worker 1"},
       {},
       {},
       0},
      {"ScaleDownStopsTheHighestWorker",
       NoChange,
       {Running(kCoord), Running(kPs0), Running(kW0), Running(kW1), Running(kW2)},
       0,
       JobPhase::kRunning,
       "Running",
       {},
       {},
       {"worker 2"},
       0},
      {"ScaleUpCreatesWorkers",
       [](v1alpha1::TrainingJob& j) { j.spec.replica_specs[ReplicaType::kWorker].replicas = 3; },
       AllRunning(),
       0,
       JobPhase::kRunning,
       "Running",
       {"worker 2"},
       {},
       {},
       0},
      {"Suspended",
       [](v1alpha1::TrainingJob& j) { j.spec.run_policy.suspend = true; },
       {Running(kCoord), Running(kPs0), Ended(kW0, 137), Pending(kW1)},
       1,
       JobPhase::kSuspended,
       "Suspended",
       {},
       {},
       {"coordinator 0", "ps 0", "worker 0", "worker 1"},
       1},
      {"DeadlineExceeded",
       [](v1alpha1::TrainingJob& j) { j.spec.run_policy.active_deadline_seconds = 600; },
       AllRunning(),
       0,
       JobPhase::kFailed,
       "DeadlineExceeded",
       {},
       {},
       {"coordinator 0", "ps 0", "worker 0", "worker 1"},
       0,
       absl::Seconds(600)},
      {"DeadlineNotYet",
       [](v1alpha1::TrainingJob& j) { j.spec.run_policy.active_deadline_seconds = 600; },
       AllRunning(),
       0,
       JobPhase::kRunning,
       "Running",
       {},
       {},
       {},
       0,
       absl::Seconds(599)},
      {"SuccessBeforeTheDeadline",
       [](v1alpha1::TrainingJob& j) { j.spec.run_policy.active_deadline_seconds = 600; },
       {Ended(kCoord, 0), Running(kPs0), Running(kW0), Running(kW1)},
       0,
       JobPhase::kSucceeded,
       "Succeeded",
       {},
       {},
       {"ps 0", "worker 0", "worker 1"},
       0,
       absl::Seconds(900)},
  };
}

class JobPhaseTest : public ::testing::TestWithParam<Case> {};

TEST_P(JobPhaseTest, Decides) {
  const Case& c = GetParam();
  v1alpha1::TrainingJob job = testing_jobs::SmallJob();
  c.configure(job);
  JobDecision d = DecideJobPhase(job, {c.observed, c.restarts_so_far, c.active_for, {}, {}});
  EXPECT_EQ(JobPhaseName(d.phase), JobPhaseName(c.phase)) << d.reason << ": " << d.message;
  EXPECT_EQ(d.reason, c.reason) << d.message;
  EXPECT_EQ(Names(d.to_create), c.to_create);
  EXPECT_EQ(Names(d.to_restart), c.to_restart);
  EXPECT_EQ(Names(d.to_stop), c.to_stop);
  EXPECT_EQ(d.restart_count, c.restart_count);
  EXPECT_FALSE(d.message.empty());
  EXPECT_EQ(d.restarts.size(), d.to_restart.size());
}

INSTANTIATE_TEST_SUITE_P(Table, JobPhaseTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

TEST(JobPhaseMessages, FailureCarriesTheDecisionMessage) {
  v1alpha1::TrainingJob job = testing_jobs::SmallJob();
  job.spec.run_policy.backoff_limit = 0;
  JobDecision d = DecideJobPhase(
      job, {{Running(kCoord), Running(kPs0), Running(kW0), Ended(kW1, 137, true)}, 0, {}, {}, {}});
  EXPECT_THAT(d.message, HasSubstr("worker 1 was OOM-killed"));
  EXPECT_THAT(d.message, HasSubstr("backoffLimit 0 reached"));
}

TEST(JobPhaseMessages, DeadlineNamesTheLimit) {
  v1alpha1::TrainingJob job = testing_jobs::SmallJob();
  job.spec.run_policy.active_deadline_seconds = 60;
  JobDecision d = DecideJobPhase(job, {AllRunning(), 0, absl::Seconds(61), {}, {}});
  EXPECT_THAT(d.message, HasSubstr("past activeDeadlineSeconds 60"));
}

TEST(ReplicasToCleanTest, Policies) {
  std::vector<ReplicaObservation> replicas = {Ended(kCoord, 0), Running(kPs0), Pending(kW0),
                                              ReplicaObservation{kW1, ReplicaPhase::kMissing, {}}};
  EXPECT_EQ(Names(ReplicasToClean(CleanPodPolicy::kRunning, replicas)),
            (std::vector<std::string>{"ps 0", "worker 0"}));
  EXPECT_EQ(Names(ReplicasToClean(CleanPodPolicy::kAll, replicas)),
            (std::vector<std::string>{"coordinator 0", "ps 0", "worker 0"}));
  EXPECT_TRUE(ReplicasToClean(CleanPodPolicy::kNone, replicas).empty());
}

}  // namespace
}  // namespace tj
