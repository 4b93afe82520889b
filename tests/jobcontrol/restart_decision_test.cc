// The restart decision table. Each row is one replica ending; Kubeflow TFJob's known failures
// are named cases (Kubeflow*).
#include "jobcontrol/restart_decision.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/jobcontrol/terminations.h"
#include "tests/jobcontrol/test_jobs.h"

namespace tj {
namespace {

using ::testing::HasSubstr;
using v1alpha1::RestartPolicy;

constexpr ReplicaType kC = ReplicaType::kCoordinator;
constexpr ReplicaType kP = ReplicaType::kPs;
constexpr ReplicaType kW = ReplicaType::kWorker;
constexpr RestartAction kRestart = RestartAction::kRestart;
constexpr RestartAction kComplete = RestartAction::kComplete;
constexpr RestartAction kFail = RestartAction::kFail;

using testing::Exit;
using testing::Signal;
using testing::Oom;
using testing::Disrupted;
using testing::WaitedForPs;

struct Case {
  std::string name;
  ReplicaType type;
  RestartPolicy policy;
  Termination end;
  int32_t restarts_so_far;
  int32_t backoff_limit;
  RestartAction action;
  bool counted;
  std::string reason;
  std::vector<int32_t> restart_exit_codes = {42};
};

Case WithCodes(Case c, std::vector<int32_t> codes) {
  c.restart_exit_codes = std::move(codes);
  return c;
}

std::vector<Case> Cases() {
  const auto never = RestartPolicy::kNever;
  const auto on_failure = RestartPolicy::kOnFailure;
  const auto always = RestartPolicy::kAlways;
  const auto exit_code = RestartPolicy::kExitCode;
  return {
      // Never: nothing restarts.
      {"NeverWorkerExit0", kW, never, Exit(0), 0, 6, kComplete, false, "ReplicaSucceeded"},
      {"NeverWorkerExit1", kW, never, Exit(1), 0, 6, kFail, false, "RestartPolicyNever"},
      {"NeverPsSigkill", kP, never, Exit(137), 0, 6, kFail, false, "RestartPolicyNever"},
      {"NeverDisrupted", kW, never, Disrupted(143), 0, 6, kFail, false, "RestartPolicyNever"},
      {"NeverOom", kW, never, Oom(), 0, 6, kFail, false, "RestartPolicyNever"},
      {"NeverCoordinatorExit0", kC, never, Exit(0), 0, 6, kComplete, false, "CoordinatorSucceeded"},
      // OnFailure: non-zero restarts.
      {"OnFailureExit1", kW, on_failure, Exit(1), 0, 6, kRestart, true, "Error"},
      {"OnFailureExit0", kW, on_failure, Exit(0), 0, 6, kComplete, false, "ReplicaSucceeded"},
      {"OnFailureLocalSigkill", kP, on_failure, Signal(9), 0, 6, kRestart, true, "Error"},
      {"OnFailureCoordinatorExit2", kC, on_failure, Exit(2), 0, 6, kRestart, true, "Error"},
      // Always: everything restarts, except a coordinator that finished the job.
      {"AlwaysWorkerExit0", kW, always, Exit(0), 0, 6, kRestart, true, "Exited"},
      {"AlwaysPsExit1", kP, always, Exit(1), 0, 6, kRestart, true, "Error"},
      {"AlwaysCoordinatorExit0IsSuccess", kC, always, Exit(0), 0, 6, kComplete, false,
       "CoordinatorSucceeded"},
      {"AlwaysCoordinatorExit1", kC, always, Exit(1), 0, 6, kRestart, true, "Error"},
      {"AlwaysWorkerExit0AtLimit", kW, always, Exit(0), 6, 6, kFail, false, "BackoffLimitExceeded"},
      // ExitCode: restartExitCodes and 130/137/143 restart; other codes are permanent.
      {"ExitCodeRestartCode42", kC, exit_code, Exit(42), 0, 6, kRestart, true, "RestartExitCode"},
      WithCodes(
          {"ExitCodeCustomCode", kW, exit_code, Exit(3), 0, 6, kRestart, true, "RestartExitCode"},
          {42, 3}),
      WithCodes({"ExitCodeEmptyListNoLonger42", kC, exit_code, Exit(42), 0, 6, kFail, false,
                 "PermanentExitCode"},
                {}),
      {"ExitCode1IsPermanent", kW, exit_code, Exit(1), 0, 6, kFail, false, "PermanentExitCode"},
      {"ExitCode127IsPermanent", kP, exit_code, Exit(127), 0, 6, kFail, false, "PermanentExitCode"},
      {"ExitCodeSigint130", kW, exit_code, Exit(130), 0, 6, kRestart, true, "Signal"},
      {"ExitCodeSigkill137", kP, exit_code, Exit(137), 0, 6, kRestart, true, "Signal"},
      {"ExitCodeSigterm143", kW, exit_code, Exit(143), 0, 6, kRestart, true, "Signal"},
      {"ExitCodeSigsegv139IsPermanent", kW, exit_code, Exit(139), 0, 6, kFail, false,
       "PermanentExitCode"},
      {"ExitCodeSigabrt134IsPermanent", kC, exit_code, Exit(134), 0, 6, kFail, false,
       "PermanentExitCode"},
      {"ExitCodeLocalSigterm", kW, exit_code, Signal(15), 0, 6, kRestart, true, "Signal"},
      {"ExitCodeLocalSigsegv", kW, exit_code, Signal(11), 0, 6, kFail, false, "PermanentExitCode"},
      {"ExitCodeWorkerExit0", kW, exit_code, Exit(0), 0, 6, kComplete, false, "ReplicaSucceeded"},
      {"ExitCodeCoordinatorExit0", kC, exit_code, Exit(0), 0, 6, kComplete, false,
       "CoordinatorSucceeded"},
      // OOM kills restart but always count, so they end at backoffLimit.
      {"OomUnderExitCode", kW, exit_code, Oom(), 0, 6, kRestart, true, "OOMKilled"},
      {"OomUnderOnFailure", kP, on_failure, Oom(), 5, 6, kRestart, true, "OOMKilled"},
      {"OomAtBackoffLimit", kW, exit_code, Oom(), 6, 6, kFail, false, "BackoffLimitExceeded"},
      {"OomWhileDisruptedStillCounts",
       kW,
       exit_code,
       {137, 0, true, true},
       0,
       6,
       kRestart,
       true,
       "OOMKilled"},
      // Disruptions restart and are not counted (preemption must not exhaust backoffLimit).
      {"DisruptedWorkerAtLimit", kW, exit_code, Disrupted(143), 6, 6, kRestart, false, "Disrupted"},
      {"DisruptedWorkerExit0IsNotDone", kW, exit_code, Disrupted(0), 0, 6, kRestart, false,
       "Disrupted"},
      {"DisruptedCoordinatorExit0IsNotSuccess", kC, on_failure, Disrupted(0), 0, 6, kRestart, false,
       "Disrupted"},
      {"DisruptedPsPermanentCode", kP, exit_code, Disrupted(1), 0, 0, kRestart, false, "Disrupted"},
      // A coordinator that gave up waiting for a PS that had not started: not counted.
      {"WaitedForPsAtLimit", kC, exit_code, WaitedForPs(42), 6, 6, kRestart, false, "WaitingForPs"},
      {"WaitedForPsOnFailure", kC, on_failure, WaitedForPs(42), 0, 6, kRestart, false,
       "WaitingForPs"},
      {"WaitedForPsOtherCodeIsItsOwnFailure", kC, exit_code, WaitedForPs(1), 0, 6, kFail, false,
       "PermanentExitCode"},
      {"WaitedForPsUnderNever", kC, never, WaitedForPs(42), 0, 6, kFail, false,
       "RestartPolicyNever"},
      // backoffLimit counts every restart whatever the policy.
      {"KubeflowBackoffLimitIgnoredUnderExitCode", kW, exit_code, Exit(137), 3, 3, kFail, false,
       "BackoffLimitExceeded"},
      {"BackoffLimitUnderExitCodeRestartCode", kC, exit_code, Exit(42), 3, 3, kFail, false,
       "BackoffLimitExceeded"},
      {"BackoffLimitZeroUnderOnFailure", kW, on_failure, Exit(1), 0, 0, kFail, false,
       "BackoffLimitExceeded"},
      {"BelowBackoffLimit", kW, on_failure, Exit(1), 2, 3, kRestart, true, "Error"},
      {"NegativeBackoffLimitActsAsZero", kW, on_failure, Exit(1), 0, -1, kFail, false,
       "BackoffLimitExceeded"},
  };
}

class RestartDecisionTest : public ::testing::TestWithParam<Case> {};

TEST_P(RestartDecisionTest, Decides) {
  const Case& c = GetParam();
  RestartRules rules{c.policy, c.restart_exit_codes, c.backoff_limit};
  RestartDecision d = DecideRestart({c.type, 1}, rules, c.end, c.restarts_so_far);
  EXPECT_EQ(d.action, c.action) << d.reason << ": " << d.message;
  EXPECT_EQ(d.counts_toward_backoff_limit, c.counted) << d.message;
  EXPECT_EQ(d.reason, c.reason) << d.message;
  EXPECT_EQ(d.job_succeeded, c.reason == "CoordinatorSucceeded");
  EXPECT_FALSE(d.message.empty());
}

INSTANTIATE_TEST_SUITE_P(Table, RestartDecisionTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

TEST(RestartDecisionMessages, BackoffLimitNamesTheLimit) {
  RestartRules rules{RestartPolicy::kExitCode, {42}, 3};
  RestartDecision d = DecideRestart({kW, 2}, rules, Exit(137), 3);
  EXPECT_EQ(d.message,
            "worker 2 exited with code 137 and the job has already restarted 3 times: "
            "backoffLimit 3 reached");
}

TEST(RestartDecisionMessages, OomFailureSaysSo) {
  RestartDecision d = DecideRestart({kP, 0}, RestartRules{}, Oom(), 6);
  EXPECT_THAT(d.message, HasSubstr("ps 0 was OOM-killed (exit code 137)"));
  EXPECT_THAT(d.message, HasSubstr("backoffLimit 6 reached"));
  EXPECT_THAT(d.message, HasSubstr("raise the container's memory limit"));
}

TEST(RestartDecisionMessages, PermanentExitCodeListsWhatWouldRestart) {
  RestartDecision d = DecideRestart({kW, 0}, RestartRules{}, Exit(1), 0);
  EXPECT_THAT(d.message, HasSubstr("worker 0 exited with code 1"));
  EXPECT_THAT(d.message, HasSubstr("restartExitCodes [42] and on 130, 137, 143"));
}

TEST(RestartDecisionMessages, LocalSignalIsDescribed) {
  RestartDecision d = DecideRestart({kW, 0}, RestartRules{}, Signal(9), 0);
  EXPECT_THAT(d.message, HasSubstr("worker 0 was killed by signal 9 (exit code 137)"));
}

TEST(RestartRulesTest, FromTheJob) {
  v1alpha1::TrainingJob job = testing_jobs::SmallJob();
  job.spec.replica_specs[kW].restart_policy = RestartPolicy::kOnFailure;
  job.spec.fault_tolerance.restart_exit_codes = std::vector<int32_t>{42, 75};
  job.spec.run_policy.backoff_limit = 2;
  RestartRules worker = RestartRulesFor(job, kW);
  EXPECT_EQ(worker.policy, RestartPolicy::kOnFailure);
  EXPECT_EQ(worker.restart_exit_codes, (std::vector<int32_t>{42, 75}));
  EXPECT_EQ(worker.backoff_limit, 2);
  EXPECT_EQ(RestartRulesFor(job, kC).policy, RestartPolicy::kExitCode);
}

TEST(RestartRulesTest, UndefaultedJobReadsDefaults) {
  RestartRules rules = RestartRulesFor(v1alpha1::TrainingJob{}, kP);
  EXPECT_EQ(rules.policy, RestartPolicy::kExitCode);
  EXPECT_EQ(rules.restart_exit_codes, std::vector<int32_t>{42});
  EXPECT_EQ(rules.backoff_limit, 6);
}

}  // namespace
}  // namespace tj

namespace tj {
namespace {

TEST(PsDisruptionTest, ACoordinatorFailingSoonAfterAPsDisruptionIsPartOfIt) {
  struct Case {
    Termination exit;
    absl::Duration since;
    bool expected;
  };
  const std::vector<Case> cases = {
      {Exit(42), absl::Seconds(2), true},     // lost the PS, restores
      {Exit(143), absl::Seconds(59), true},   // any failure in the window
      {Signal(15), absl::Seconds(1), true},     // killed by a signal
      {Exit(0), absl::Seconds(1), false},     // finished: not a failure
      {Exit(42), absl::Minutes(1), false},    // window over
      {Exit(42), absl::InfiniteDuration(), false},  // no PS disruption
      {Exit(42), absl::Seconds(-1), false},   // before it: unrelated
  };
  for (const Case& c : cases) {
    EXPECT_EQ(CoordinatorExitFollowsPsDisruption(c.exit, c.since), c.expected)
        << "exit " << c.exit.exit_code << " signal " << c.exit.signal << " after "
        << absl::FormatDuration(c.since);
  }
}

}  // namespace
}  // namespace tj
