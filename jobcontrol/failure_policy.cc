#include "jobcontrol/failure_policy.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/failure_policy_json.h"

namespace tj {
namespace {

using v1alpha1::ExitCodeOperator;
using v1alpha1::FailureCondition;
using v1alpha1::FailurePolicyAction;
using v1alpha1::FailurePolicyRule;

bool ConditionHolds(FailureCondition condition, const Termination& t) {
  switch (condition) {
    case FailureCondition::kDisruptionTarget:
      return t.disrupted || t.evicted;
    case FailureCondition::kOomKilled:
      return t.oom_killed;
    case FailureCondition::kEvicted:
      return t.evicted;
  }
  return false;
}

bool RuleMatches(const FailurePolicyRule& rule, ReplicaType type, const Termination& t) {
  if (rule.replica_types && std::find(rule.replica_types->begin(), rule.replica_types->end(),
                                      type) == rule.replica_types->end()) {
    return false;
  }
  if (rule.on_exit_codes) {
    const std::vector<int32_t>& values = rule.on_exit_codes->values;
    const bool in = std::find(values.begin(), values.end(), EffectiveExitCode(t)) != values.end();
    return rule.on_exit_codes->op == ExitCodeOperator::kNotIn ? !in : in;
  }
  if (rule.on_pod_conditions) {
    return std::any_of(rule.on_pod_conditions->begin(), rule.on_pod_conditions->end(),
                       [&](FailureCondition c) { return ConditionHolds(c, t); });
  }
  return false;
}

RestartDecision ByRule(ReplicaKey replica, const FailurePolicyMatch& match, const Termination& t) {
  const std::string who = DescribeReplicaEnd(replica, t);
  const std::string rule = v1alpha1::FailurePolicyRulePath(match.index);
  RestartDecision d;
  d.action = RestartAction::kRestart;
  switch (match.action) {
    case FailurePolicyAction::kFailJob:
      d.action = RestartAction::kFail;
      d.reason = "FailurePolicyFailJob";
      d.message = absl::StrCat(who, ", which matches ", rule, " (action FailJob)");
      break;
    case FailurePolicyAction::kIgnore:
      d.reason = "FailurePolicyIgnore";
      d.message = absl::StrCat(who, "; ", rule,
                               " (action Ignore) restarts it without counting the restart");
      break;
    case FailurePolicyAction::kCount:
      d.counts_toward_backoff_limit = true;
      d.reason = "FailurePolicyCount";
      d.message = absl::StrCat(who, "; ", rule, " (action Count) restarts it, counted");
      break;
    case FailurePolicyAction::kRestartJob:
      d.counts_toward_backoff_limit = true;
      d.restart_job = true;
      d.reason = "FailurePolicyRestartJob";
      d.message = absl::StrCat(who, "; ", rule,
                               " (action RestartJob) restarts every replica, the coordinator "
                               "from the last checkpoint");
      break;
  }
  return d;
}

}  // namespace

bool ReplicaFailed(const Termination& t) {
  return EffectiveExitCode(t) != 0 || t.oom_killed || t.disrupted || t.evicted;
}

std::optional<FailurePolicyMatch> MatchFailurePolicy(const v1alpha1::TrainingJob& job,
                                                     ReplicaType type, const Termination& t) {
  if (!job.spec.failure_policy || !ReplicaFailed(t)) return std::nullopt;
  const std::vector<FailurePolicyRule>& rules = job.spec.failure_policy->rules;
  for (size_t i = 0; i < rules.size(); ++i) {
    if (rules[i].action && RuleMatches(rules[i], type, t)) {
      return FailurePolicyMatch{i, *rules[i].action};
    }
  }
  return std::nullopt;
}

RestartDecision DecideReplicaEnd(const v1alpha1::TrainingJob& job, ReplicaKey replica,
                                 const Termination& t, const RestartCounts& so_far) {
  const RestartRules rules = RestartRulesFor(job, replica.type);
  RestartDecision decision;
  if (std::optional<FailurePolicyMatch> match = MatchFailurePolicy(job, replica.type, t)) {
    decision = ApplyBackoffLimit(replica, rules, t, so_far.job, ByRule(replica, *match, t));
  } else {
    decision = DecideRestart(replica, rules, t, so_far.job);
  }
  if (decision.action != RestartAction::kRestart || !decision.counts_toward_backoff_limit) {
    return decision;
  }
  auto spec = job.spec.replica_specs.find(replica.type);
  if (spec == job.spec.replica_specs.end() || !spec->second.restart_limit) return decision;
  const int32_t limit = std::max(*spec->second.restart_limit, 0);
  const int32_t restarted = so_far.Of(replica.type);
  if (restarted < limit) return decision;
  const std::string type(v1alpha1::ReplicaTypeName(replica.type));
  RestartDecision failed;
  failed.action = RestartAction::kFail;
  failed.reason = "RestartLimitExceeded";
  failed.message = absl::StrCat(DescribeReplicaEnd(replica, t), " and the job's ", type,
                                " replicas have already had ", restarted,
                                " counted restarts: spec.replicaSpecs.", type, ".restartLimit ",
                                limit, " reached");
  return failed;
}

}  // namespace tj
