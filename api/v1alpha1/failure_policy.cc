#include "api/v1alpha1/failure_policy.h"

#include "api/v1alpha1/name_table.h"

namespace tj::v1alpha1 {
namespace {

constexpr NameTable<FailurePolicyAction, 4> kActionNames = {{
    {FailurePolicyAction::kIgnore, "Ignore"},
    {FailurePolicyAction::kCount, "Count"},
    {FailurePolicyAction::kRestartJob, "RestartJob"},
    {FailurePolicyAction::kFailJob, "FailJob"},
}};
constexpr NameTable<ExitCodeOperator, 2> kOperatorNames = {{
    {ExitCodeOperator::kIn, "In"},
    {ExitCodeOperator::kNotIn, "NotIn"},
}};
constexpr NameTable<FailureCondition, 3> kConditionNames = {{
    {FailureCondition::kDisruptionTarget, "DisruptionTarget"},
    {FailureCondition::kOomKilled, "OOMKilled"},
    {FailureCondition::kEvicted, "Evicted"},
}};

}  // namespace

std::string_view FailurePolicyActionName(FailurePolicyAction action) {
  return NameOf(kActionNames, action);
}
std::optional<FailurePolicyAction> ParseFailurePolicyAction(std::string_view name) {
  return Parse(kActionNames, name);
}
std::vector<std::string_view> FailurePolicyActionNames() { return NamesOf(kActionNames); }

std::string_view ExitCodeOperatorName(ExitCodeOperator op) { return NameOf(kOperatorNames, op); }
std::optional<ExitCodeOperator> ParseExitCodeOperator(std::string_view name) {
  return Parse(kOperatorNames, name);
}
std::vector<std::string_view> ExitCodeOperatorNames() { return NamesOf(kOperatorNames); }

std::string_view FailureConditionName(FailureCondition condition) {
  return NameOf(kConditionNames, condition);
}
std::optional<FailureCondition> ParseFailureCondition(std::string_view name) {
  return Parse(kConditionNames, name);
}
std::vector<std::string_view> FailureConditionNames() { return NamesOf(kConditionNames); }

}  // namespace tj::v1alpha1
