// The failure policy table: a replica's end with spec.failurePolicy rules and replicaSpecs.<T>.
// restartLimit -> restart (counted or not), a job restart, or the job's failure; then the job-level
// cases of a RestartJob rule (every replica restarts, counted once) and the per-type counts.
#include "jobcontrol/failure_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "jobcontrol/job_phase.h"
#include "tests/jobcontrol/terminations.h"
#include "tests/jobcontrol/test_jobs.h"

namespace tj {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using v1alpha1::ExitCodeOperator;
using v1alpha1::FailureCondition;
using v1alpha1::FailurePolicyAction;
using v1alpha1::FailurePolicyRule;
using v1alpha1::RestartPolicy;

constexpr ReplicaType kC = ReplicaType::kCoordinator;
constexpr ReplicaType kP = ReplicaType::kPs;
constexpr ReplicaType kW = ReplicaType::kWorker;
constexpr RestartAction kRestart = RestartAction::kRestart;
constexpr RestartAction kComplete = RestartAction::kComplete;
constexpr RestartAction kFail = RestartAction::kFail;
constexpr FailurePolicyAction kIgnore = FailurePolicyAction::kIgnore;
constexpr FailurePolicyAction kCount = FailurePolicyAction::kCount;
constexpr FailurePolicyAction kRestartJob = FailurePolicyAction::kRestartJob;
constexpr FailurePolicyAction kFailJob = FailurePolicyAction::kFailJob;

using testing::Exit;
using testing::Signal;
using testing::Oom;
using testing::Disrupted;
using testing::Evicted;

FailurePolicyRule Codes(FailurePolicyAction action, ExitCodeOperator op,
                        std::vector<int32_t> values, std::vector<ReplicaType> types = {}) {
  FailurePolicyRule rule;
  rule.action = action;
  if (!types.empty()) rule.replica_types = std::move(types);
  rule.on_exit_codes = v1alpha1::ExitCodeRequirement{op, std::move(values)};
  return rule;
}
FailurePolicyRule In(FailurePolicyAction action, std::vector<int32_t> values,
                     std::vector<ReplicaType> types = {}) {
  return Codes(action, ExitCodeOperator::kIn, std::move(values), std::move(types));
}
FailurePolicyRule NotIn(FailurePolicyAction action, std::vector<int32_t> values) {
  return Codes(action, ExitCodeOperator::kNotIn, std::move(values));
}
FailurePolicyRule On(FailurePolicyAction action, std::vector<FailureCondition> conditions) {
  FailurePolicyRule rule;
  rule.action = action;
  rule.on_pod_conditions = std::move(conditions);
  return rule;
}

using Configure = std::function<void(v1alpha1::TrainingJob&)>;

Configure Rules(std::vector<FailurePolicyRule> rules) {
  return [rules](v1alpha1::TrainingJob& job) { job.spec.failure_policy = {rules}; };
}
// `then` applied after `first`.
Configure And(Configure first, Configure then) {
  return [=](v1alpha1::TrainingJob& job) {
    first(job);
    then(job);
  };
}
Configure Policy(ReplicaType type, RestartPolicy policy) {
  return [=](v1alpha1::TrainingJob& job) { job.spec.replica_specs[type].restart_policy = policy; };
}
Configure RestartLimit(ReplicaType type, int32_t limit) {
  return [=](v1alpha1::TrainingJob& job) { job.spec.replica_specs[type].restart_limit = limit; };
}
void NoChange(v1alpha1::TrainingJob&) {}

// Counted restarts so far: the job's, the PS's and the workers'.
struct SoFar {
  int32_t job;
  int32_t ps;
  int32_t worker;
};

struct Case {
  std::string name;
  Configure configure;
  ReplicaType type;
  Termination end;
  SoFar so_far;
  RestartAction action;
  bool counted;
  std::string reason;
  bool restart_job = false;
  std::string message = "";  // a substring of the decision's message, when not empty
};

std::vector<Case> Cases() {
  const FailureCondition disruption = FailureCondition::kDisruptionTarget;
  const FailureCondition oom = FailureCondition::kOomKilled;
  const FailureCondition evicted = FailureCondition::kEvicted;
  const Configure ignore_disruptions = Rules({On(kIgnore, {disruption})});
  return {
      // No rule matches: DecideRestart exactly.
      {"NoPolicyPermanentExit", NoChange, kW, Exit(1), {0, 0, 0}, kFail, false,
       "PermanentExitCode"},
      {"NoPolicyRestartExitCode", NoChange, kC, Exit(42), {0, 0, 0}, kRestart, true,
       "RestartExitCode"},
      {"NoRuleMatchesKeepsRestartPolicy", Rules({In(kFailJob, {3})}), kW, Exit(1), {0, 0, 0}, kFail,
       false, "PermanentExitCode"},
      {"RuleForAnotherTypeDoesNotMatch",
       And(Policy(kW, RestartPolicy::kOnFailure), Rules({In(kFailJob, {3}, {kP, kC})})), kW,
       Exit(3), {0, 0, 0}, kRestart, true, "Error"},
      // FailJob: at once, naming the rule.
      {"FailJobOnAWorkerExitCode",
       And(Policy(kW, RestartPolicy::kOnFailure),
           Rules({On(kIgnore, {disruption}), In(kFailJob, {3}, {kW})})),
       kW, Exit(3), {0, 0, 0}, kFail, false, "FailurePolicyFailJob", false,
       "worker 0 exited with code 3, which matches spec.failurePolicy.rules[1] (action FailJob)"},
      {"FailJobOnAnOomKilledPs", Rules({On(kFailJob, {oom})}), kP, Oom(), {0, 0, 0}, kFail, false,
       "FailurePolicyFailJob", false, "ps 0 was OOM-killed"},
      {"FailJobOnTheCoordinator", Rules({NotIn(kFailJob, {42})}), kC, Exit(2), {0, 0, 0}, kFail,
       false,
       "FailurePolicyFailJob"},
      // Ignore: restarts, never counted, whatever the limits and restartPolicy say.
      {"IgnoreAnOomKillAtTheBackoffLimit", Rules({On(kIgnore, {oom})}), kW, Oom(), {6, 0, 0},
       kRestart, false, "FailurePolicyIgnore", false,
       "spec.failurePolicy.rules[0] (action Ignore)"},
      {"IgnoreWinsOverRestartPolicyNever",
       And(Policy(kW, RestartPolicy::kNever), Rules({In(kIgnore, {1})})), kW, Exit(1), {0, 0, 0},
       kRestart, false, "FailurePolicyIgnore"},
      {"IgnoreWithARestartLimitOf0", And(RestartLimit(kW, 0), ignore_disruptions), kW,
       Disrupted(143), {0, 0, 0}, kRestart, false, "FailurePolicyIgnore"},
      // Count: a permanent exit code restarts, counted.
      {"CountAPermanentExitCode", Rules({In(kCount, {1})}), kW, Exit(1), {2, 0, 0}, kRestart, true,
       "FailurePolicyCount"},
      {"CountADisruption", Rules({On(kCount, {disruption})}), kP, Disrupted(143), {0, 0, 0},
       kRestart,
       true, "FailurePolicyCount"},
      {"CountAtTheBackoffLimit", Rules({In(kCount, {1})}), kW, Exit(1), {6, 0, 0}, kFail, false,
       "BackoffLimitExceeded", false, "backoffLimit 6 reached"},
      // Matching: NotIn, signals, first match, conditions.
      {"NotInMatchesOtherCodes", Rules({NotIn(kCount, {42})}), kW, Exit(3), {0, 0, 0}, kRestart,
       true,
       "FailurePolicyCount"},
      {"NotInSkipsItsCodes", Rules({NotIn(kFailJob, {42})}), kW, Exit(42), {0, 0, 0}, kRestart,
       true,
       "RestartExitCode"},
      {"ALocalSignalIs128PlusN", Rules({In(kIgnore, {137})}), kW, Signal(9), {0, 0, 0}, kRestart,
       false,
       "FailurePolicyIgnore"},
      {"TheFirstMatchingRuleWins", Rules({In(kIgnore, {3}), In(kFailJob, {3})}), kW, Exit(3), {0, 0,
       0},
       kRestart, false, "FailurePolicyIgnore"},
      {"DisruptionTargetMatchesADisruptedExit0", Rules({On(kFailJob, {disruption})}), kW,
       Disrupted(0), {0, 0, 0}, kFail, false, "FailurePolicyFailJob"},
      {"DisruptionTargetMatchesAnEviction", Rules({On(kFailJob, {disruption})}), kW, Evicted(), {0,
       0, 0},
       kFail, false, "FailurePolicyFailJob"},
      {"EvictedDoesNotMatchOtherDisruptions", Rules({On(kFailJob, {evicted})}), kW,
       Disrupted(143), {0, 0, 0}, kRestart, false, "Disrupted"},
      {"EvictedMatchesAnEviction", Rules({On(kCount, {evicted, oom})}), kW, Evicted(), {0, 0, 0},
       kRestart, true, "FailurePolicyCount"},
      {"ExitCodesMatchADisruptedReplica", Rules({In(kCount, {143})}), kW, Disrupted(143), {0, 0, 0},
       kRestart, true, "FailurePolicyCount"},
      // Rules judge failures only.
      {"ACoordinatorExit0IsSuccess", Rules({NotIn(kFailJob, {1})}), kC, Exit(0), {0, 0, 0},
       kComplete,
       false, "CoordinatorSucceeded"},
      {"AWorkerExit0IsDone",
       And(Policy(kW, RestartPolicy::kOnFailure), Rules({NotIn(kFailJob, {1})})), kW, Exit(0),
       {0, 0, 0}, kComplete, false, "ReplicaSucceeded"},
      // RestartJob.
      {"RestartJobIsACountedRestart", Rules({In(kRestartJob, {137}, {kW})}), kW, Exit(137),
       {1, 0, 0}, kRestart, true, "FailurePolicyRestartJob", true,
       "(action RestartJob) restarts every replica"},
      {"RestartJobAtTheBackoffLimit", Rules({In(kRestartJob, {137})}), kW, Exit(137), {6, 0, 0},
       kFail, false, "BackoffLimitExceeded"},
      // restartLimit: counted restarts of one type.
      {"RestartLimitExceeded", RestartLimit(kW, 2), kW, Exit(42), {2, 0, 2}, kFail, false,
       "RestartLimitExceeded", false,
       "the job's Worker replicas have already had 2 counted restarts: "
       "spec.replicaSpecs.Worker.restartLimit 2 reached"},
      {"RestartLimitBelow", RestartLimit(kW, 2), kW, Exit(42), {5, 4, 1}, kRestart,
       true, "RestartExitCode"},
      {"RestartLimitOfAnotherType", RestartLimit(kW, 1), kP, Exit(137), {1, 0, 1}, kRestart,
       true, "Signal"},
      {"RestartLimitWithCount", And(RestartLimit(kP, 1), Rules({In(kCount, {1})})), kP, Exit(1),
       {1, 1, 0}, kFail, false, "RestartLimitExceeded"},
      {"RestartLimitIgnoresDisruptions", RestartLimit(kW, 0), kW, Disrupted(143), {0, 0, 0},
       kRestart,
       false, "Disrupted"},
  };
}

class FailurePolicyTest : public ::testing::TestWithParam<Case> {};

TEST_P(FailurePolicyTest, Decides) {
  const Case& c = GetParam();
  v1alpha1::TrainingJob job = testing_jobs::SmallJob();
  c.configure(job);
  const RestartCounts so_far{c.so_far.job, {{kP, c.so_far.ps}, {kW, c.so_far.worker}}};
  const RestartDecision d = DecideReplicaEnd(job, {c.type, 0}, c.end, so_far);
  EXPECT_EQ(static_cast<int>(d.action), static_cast<int>(c.action))
      << d.reason << ": " << d.message;
  EXPECT_EQ(d.counts_toward_backoff_limit, c.counted);
  EXPECT_EQ(d.reason, c.reason) << d.message;
  EXPECT_EQ(d.restart_job, c.restart_job);
  if (!c.message.empty()) {
    EXPECT_THAT(d.message, HasSubstr(c.message));
  }
}

INSTANTIATE_TEST_SUITE_P(Table, FailurePolicyTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

// The job level.
constexpr ReplicaKey kCoord{kC, 0};
constexpr ReplicaKey kPs0{kP, 0};
constexpr ReplicaKey kW0{kW, 0};
constexpr ReplicaKey kW1{kW, 1};

ReplicaObservation Running(ReplicaKey key) { return {key, ReplicaPhase::kRunning, {}}; }
ReplicaObservation Ended(ReplicaKey key, Termination end) {
  return {key, ReplicaPhase::kTerminated, end};
}

std::vector<std::string> Names(const std::vector<ReplicaKey>& keys) {
  std::vector<std::string> out;
  for (const ReplicaKey& k : keys) out.push_back(DescribeReplica(k));
  return out;
}

v1alpha1::TrainingJob JobWith(Configure configure) {
  v1alpha1::TrainingJob job = testing_jobs::SmallJob();
  configure(job);
  return job;
}

TEST(FailurePolicyJobTest, RestartJobRestartsEveryReplicaAndCountsOnce) {
  const v1alpha1::TrainingJob job = JobWith(Rules({In(kRestartJob, {137}, {kW})}));
  JobObservation observed;
  observed.replicas = {Running(kCoord), Running(kPs0), Running(kW0), Ended(kW1, Exit(137))};
  observed.restarts_so_far = 2;
  observed.restarts_by_type = {{kP, 2}};
  const JobDecision d = DecideJobPhase(job, observed);
  EXPECT_EQ(d.phase, JobPhase::kRestarting);
  EXPECT_EQ(d.reason, "FailurePolicyRestartJob");
  EXPECT_TRUE(d.restart_job);
  EXPECT_EQ(Names(d.to_restart),
            (std::vector<std::string>{"coordinator 0", "ps 0", "worker 0", "worker 1"}));
  ASSERT_EQ(d.restarts.size(), 4u);
  int counted = 0;
  for (const auto& [key, restart] : d.restarts) {
    EXPECT_EQ(restart.action, RestartAction::kRestart);
    EXPECT_EQ(restart.reason, "FailurePolicyRestartJob");
    counted += restart.counts_toward_backoff_limit ? 1 : 0;
  }
  EXPECT_EQ(counted, 1) << "the job's restart is one restart";
  EXPECT_EQ(d.restart_count, 3);
  EXPECT_EQ(d.restart_counts_by_type, (std::map<ReplicaType, int32_t>{{kP, 2}, {kW, 1}}));
  EXPECT_THAT(d.message, HasSubstr("worker 1 exited with code 137"));
  EXPECT_THAT(d.message, Not(HasSubstr("worker 0"))) << "said once, by the replica that caused it";
  EXPECT_TRUE(d.to_create.empty());
}

TEST(FailurePolicyJobTest, TwoWorkersFailingTogetherRestartTheJobOnce) {
  const v1alpha1::TrainingJob job = JobWith(Rules({In(kRestartJob, {137})}));
  JobObservation observed;
  observed.replicas = {Running(kCoord), Running(kPs0), Ended(kW0, Exit(137)),
                       Ended(kW1, Exit(137))};
  const JobDecision d = DecideJobPhase(job, observed);
  EXPECT_TRUE(d.restart_job);
  EXPECT_EQ(d.to_restart.size(), 4u);
  EXPECT_EQ(d.restart_count, 1);
  EXPECT_EQ(d.restart_counts_by_type, (std::map<ReplicaType, int32_t>{{kW, 1}}));
}

TEST(FailurePolicyJobTest, AFailJobBesideARestartJobFailsTheJob) {
  const v1alpha1::TrainingJob job = JobWith(Rules({In(kRestartJob, {137}), In(kFailJob, {3})}));
  JobObservation observed;
  observed.replicas = {Running(kCoord), Running(kPs0), Ended(kW0, Exit(137)), Ended(kW1, Exit(3))};
  const JobDecision d = DecideJobPhase(job, observed);
  EXPECT_EQ(d.phase, JobPhase::kFailed);
  EXPECT_EQ(d.reason, "FailurePolicyFailJob");
  EXPECT_THAT(d.message, HasSubstr("worker 1 exited with code 3, which matches "
                                   "spec.failurePolicy.rules[1]"));
  EXPECT_FALSE(d.restart_job);
}

TEST(FailurePolicyJobTest, CountedRestartsAreCountedByType) {
  const v1alpha1::TrainingJob job = JobWith(NoChange);
  JobObservation observed;
  observed.replicas = {Ended(kCoord, Exit(42)), Ended(kPs0, Disrupted(143)), Running(kW0),
                       Ended(kW1, Signal(9))};
  observed.restarts_so_far = 1;
  observed.restarts_by_type = {{kW, 1}};
  const JobDecision d = DecideJobPhase(job, observed);
  EXPECT_EQ(d.phase, JobPhase::kRestarting);
  EXPECT_FALSE(d.restart_job);
  EXPECT_EQ(d.restart_count, 3);
  EXPECT_EQ(d.restart_counts_by_type, (std::map<ReplicaType, int32_t>{{kC, 1}, {kW, 2}}))
      << "the PS's disruption is not counted";
}

TEST(FailurePolicyJobTest, ARoleOverItsRestartLimitFailsTheJob) {
  const v1alpha1::TrainingJob job = JobWith(RestartLimit(kW, 1));
  JobObservation observed;
  observed.replicas = {Running(kCoord), Running(kPs0), Running(kW0), Ended(kW1, Exit(42))};
  observed.restarts_so_far = 1;
  observed.restarts_by_type = {{kW, 1}};
  const JobDecision d = DecideJobPhase(job, observed);
  EXPECT_EQ(d.phase, JobPhase::kFailed);
  EXPECT_EQ(d.reason, "RestartLimitExceeded");
  EXPECT_THAT(d.message, HasSubstr("spec.replicaSpecs.Worker.restartLimit 1 reached"));
  EXPECT_EQ(d.restart_counts_by_type, (std::map<ReplicaType, int32_t>{{kW, 1}}));
}

}  // namespace
}  // namespace tj
