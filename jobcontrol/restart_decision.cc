#include "jobcontrol/restart_decision.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tj {
namespace {

using v1alpha1::RestartPolicy;

std::string DescribeEnd(const Termination& t) {
  const int code = EffectiveExitCode(t);
  if (t.oom_killed) return absl::StrCat("was OOM-killed (exit code ", code, ")");
  if (t.disrupted) return absl::StrCat("was disrupted (exit code ", code, ")");
  if (t.signal != 0)
    return absl::StrCat("was killed by signal ", t.signal, " (exit code ", code, ")");
  return absl::StrCat("exited with code ", code);
}

RestartDecision Restart(std::string reason, std::string message, bool counted) {
  return {RestartAction::kRestart, counted, false, std::move(reason), std::move(message), false};
}

RestartDecision Fail(std::string reason, std::string message) {
  return {RestartAction::kFail, false, false, std::move(reason), std::move(message), false};
}

// What the policy alone says, before backoffLimit.
RestartDecision ByPolicy(ReplicaKey replica, const RestartRules& rules, const Termination& t) {
  const std::string who = absl::StrCat(DescribeReplica(replica), " ", DescribeEnd(t));
  const std::string policy(v1alpha1::RestartPolicyName(rules.policy));
  const int code = EffectiveExitCode(t);

  if (rules.policy == RestartPolicy::kNever) {
    if (code == 0 && !t.oom_killed && !t.disrupted) {
      if (replica.type == ReplicaType::kCoordinator) {
        return {RestartAction::kComplete, false, true, "CoordinatorSucceeded", who, false};
      }
      return {RestartAction::kComplete, false, false, "ReplicaSucceeded", who, false};
    }
    return Fail("RestartPolicyNever", absl::StrCat(who, " and its restartPolicy is Never"));
  }
  if (t.oom_killed) {
    return Restart("OOMKilled",
                   absl::StrCat(who,
                                "; restarting it (OOM kills count toward backoffLimit: "
                                "raise the container's memory limit if this repeats)"),
                   true);
  }
  const auto& codes = rules.restart_exit_codes;
  if (t.waited_for_ps && std::find(codes.begin(), codes.end(), code) != codes.end()) {
    return Restart("WaitingForPs",
                   absl::StrCat(who,
                                " while a PS had not started; restarting it (waiting for a PS "
                                "does not count toward backoffLimit)"),
                   false);
  }
  if (t.disrupted) {
    return Restart("Disrupted",
                   absl::StrCat(who,
                                "; restarting it (disruptions do not count "
                                "toward backoffLimit)"),
                   false);
  }
  if (code == 0) {
    if (replica.type == ReplicaType::kCoordinator) {
      return {RestartAction::kComplete, false, true, "CoordinatorSucceeded", who, false};
    }
    if (rules.policy == RestartPolicy::kAlways) {
      return Restart("Exited", absl::StrCat(who, "; restartPolicy Always restarts it"), true);
    }
    return {RestartAction::kComplete, false, false, "ReplicaSucceeded", who, false};
  }
  if (rules.policy == RestartPolicy::kOnFailure || rules.policy == RestartPolicy::kAlways) {
    return Restart("Error", absl::StrCat(who, "; restartPolicy ", policy, " restarts it"), true);
  }
  // ExitCode.
  if (std::find(codes.begin(), codes.end(), code) != codes.end()) {
    return Restart("RestartExitCode",
                   absl::StrCat(who, ", a restart exit code (restartExitCodes [",
                                absl::StrJoin(codes, ", "), "])"),
                   true);
  }
  if (std::find(kSignalRestartExitCodes.begin(), kSignalRestartExitCodes.end(), code) !=
      kSignalRestartExitCodes.end()) {
    return Restart("Signal", absl::StrCat(who, ", a signal exit code that restarts"), true);
  }
  return Fail("PermanentExitCode",
              absl::StrCat(who,
                           ", a permanent failure under restartPolicy ExitCode (restarts on "
                           "restartExitCodes [",
                           absl::StrJoin(codes, ", "), "] and on 130, 137, 143)"));
}

}  // namespace

int EffectiveExitCode(const Termination& termination) {
  return termination.signal != 0 ? 128 + termination.signal : termination.exit_code;
}

RestartRules RestartRulesFor(const v1alpha1::TrainingJob& job, ReplicaType type) {
  RestartRules rules;
  if (auto it = job.spec.replica_specs.find(type); it != job.spec.replica_specs.end()) {
    rules.policy = it->second.restart_policy.value_or(v1alpha1::kDefaultRestartPolicy);
  }
  if (job.spec.fault_tolerance.restart_exit_codes) {
    rules.restart_exit_codes = *job.spec.fault_tolerance.restart_exit_codes;
  }
  rules.backoff_limit = job.spec.run_policy.backoff_limit.value_or(v1alpha1::kDefaultBackoffLimit);
  return rules;
}

RestartDecision DecideRestart(ReplicaKey replica, const RestartRules& rules,
                              const Termination& termination, int32_t restarts_so_far) {
  return ApplyBackoffLimit(replica, rules, termination, restarts_so_far,
                           ByPolicy(replica, rules, termination));
}

std::string DescribeReplicaEnd(ReplicaKey replica, const Termination& termination) {
  return absl::StrCat(DescribeReplica(replica), " ", DescribeEnd(termination));
}

RestartDecision ApplyBackoffLimit(ReplicaKey replica, const RestartRules& rules,
                                  const Termination& termination, int32_t restarts_so_far,
                                  RestartDecision decision) {
  if (decision.action != RestartAction::kRestart || !decision.counts_toward_backoff_limit) {
    return decision;
  }
  const int32_t limit = std::max(rules.backoff_limit, 0);
  if (restarts_so_far < limit) return decision;
  std::string message = absl::StrCat(DescribeReplica(replica), " ", DescribeEnd(termination),
                                     " and the job has already restarted ", restarts_so_far,
                                     " times: backoffLimit ", limit, " reached");
  if (termination.oom_killed) {
    absl::StrAppend(&message, "; it ran out of memory: raise the container's memory limit");
  }
  return Fail("BackoffLimitExceeded", std::move(message));
}

bool CoordinatorExitFollowsPsDisruption(const Termination& coordinator_exit,
                                        absl::Duration since_ps_disruption) {
  return EffectiveExitCode(coordinator_exit) != 0 && since_ps_disruption >= absl::ZeroDuration() &&
         since_ps_disruption < kPsDisruptionWindow;
}

}  // namespace tj
