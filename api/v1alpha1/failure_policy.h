// spec.failurePolicy: rules that decide what a replica's failure does to the job, in the spirit of
// Kubernetes' podFailurePolicy and JobSet's failurePolicy. Each rule names the replica types it
// applies to and matches the failure by exit code or by pod condition; the first rule that
// matches decides. docs/trainingjob-schema.md ("Failure policy") has the rules,
// failure_policy_json.h the decoding and validation, jobcontrol/failure_policy.h the decision.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "api/v1alpha1/enums.h"

namespace tj::v1alpha1 {

// What a matching rule does with the failure.
enum class FailurePolicyAction {
  kIgnore,      // restart the replica; not counted toward backoffLimit or restartLimit
  kCount,       // restart the replica; counted, whatever restartPolicy says
  kRestartJob,  // restart every replica (the coordinator from the last checkpoint); counted once
  kFailJob,     // the job fails at once, naming the rule
};
enum class ExitCodeOperator { kIn, kNotIn };
// The pod conditions a rule can match (docs/trainingjob-schema.md says what each covers).
enum class FailureCondition { kDisruptionTarget, kOomKilled, kEvicted };

std::string_view FailurePolicyActionName(FailurePolicyAction action);
std::optional<FailurePolicyAction> ParseFailurePolicyAction(std::string_view name);
std::vector<std::string_view> FailurePolicyActionNames();
std::string_view ExitCodeOperatorName(ExitCodeOperator op);
std::optional<ExitCodeOperator> ParseExitCodeOperator(std::string_view name);
std::vector<std::string_view> ExitCodeOperatorNames();
std::string_view FailureConditionName(FailureCondition condition);
std::optional<FailureCondition> ParseFailureCondition(std::string_view name);
std::vector<std::string_view> FailureConditionNames();

// At most this many rules: each is checked on every failure, and CEL's cost is bounded by it.
inline constexpr size_t kMaxFailurePolicyRules = 20;

struct ExitCodeRequirement {
  std::optional<ExitCodeOperator> op;  // "operator" in the manifest; required
  std::vector<int32_t> values;         // 1..255 with In, 0..255 with NotIn; a set

  friend bool operator==(const ExitCodeRequirement&, const ExitCodeRequirement&) = default;
};

struct FailurePolicyRule {
  std::optional<FailurePolicyAction> action;  // required
  // Absent: every replica type.
  std::optional<std::vector<ReplicaType>> replica_types;
  // Exactly one of the two.
  std::optional<ExitCodeRequirement> on_exit_codes;
  std::optional<std::vector<FailureCondition>> on_pod_conditions;

  friend bool operator==(const FailurePolicyRule&, const FailurePolicyRule&) = default;
};

struct FailurePolicy {
  std::vector<FailurePolicyRule> rules;

  friend bool operator==(const FailurePolicy&, const FailurePolicy&) = default;
};

}  // namespace tj::v1alpha1
