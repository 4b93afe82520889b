#include "api/v1alpha1/status.h"

#include <array>
#include <utility>

namespace tj::v1alpha1 {
namespace {

constexpr std::array<std::pair<ConditionType, std::string_view>, 8> kConditionTypeNames = {{
    {ConditionType::kCreated, "Created"},
    {ConditionType::kRunning, "Running"},
    {ConditionType::kRestarting, "Restarting"},
    {ConditionType::kSucceeded, "Succeeded"},
    {ConditionType::kFailed, "Failed"},
    {ConditionType::kSuspended, "Suspended"},
    {ConditionType::kStuck, "Stuck"},
    {ConditionType::kCheckpointFailing, "CheckpointFailing"},
}};

constexpr std::array<std::pair<ConditionStatus, std::string_view>, 3> kConditionStatusNames = {{
    {ConditionStatus::kTrue, "True"},
    {ConditionStatus::kFalse, "False"},
    {ConditionStatus::kUnknown, "Unknown"},
}};

}  // namespace

std::string_view ConditionTypeName(ConditionType type) {
  for (const auto& [t, name] : kConditionTypeNames) {
    if (t == type) return name;
  }
  return "?";
}

std::optional<ConditionType> ParseConditionType(std::string_view name) {
  for (const auto& [t, n] : kConditionTypeNames) {
    if (n == name) return t;
  }
  return std::nullopt;
}

std::vector<std::string_view> ConditionTypeNames() {
  std::vector<std::string_view> names;
  for (const auto& entry : kConditionTypeNames) names.push_back(entry.second);
  return names;
}

std::string_view ConditionStatusName(ConditionStatus status) {
  for (const auto& [s, name] : kConditionStatusNames) {
    if (s == status) return name;
  }
  return "?";
}

std::optional<ConditionStatus> ParseConditionStatus(std::string_view name) {
  for (const auto& [s, n] : kConditionStatusNames) {
    if (n == name) return s;
  }
  return std::nullopt;
}

}  // namespace tj::v1alpha1
