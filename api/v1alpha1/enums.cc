#include "api/v1alpha1/enums.h"

#include <utility>

#include "api/v1alpha1/name_table.h"

namespace tj::v1alpha1 {
namespace {

constexpr NameTable<ReplicaType, 3> kReplicaTypeNames = {{
    {ReplicaType::kCoordinator, "Coordinator"},
    {ReplicaType::kPs, "PS"},
    {ReplicaType::kWorker, "Worker"},
}};
constexpr NameTable<ReplicaType, 3> kReplicaTypeLowerNames = {{
    {ReplicaType::kCoordinator, "coordinator"},
    {ReplicaType::kPs, "ps"},
    {ReplicaType::kWorker, "worker"},
}};
constexpr NameTable<RestartPolicy, 4> kRestartPolicyNames = {{
    {RestartPolicy::kNever, "Never"},
    {RestartPolicy::kOnFailure, "OnFailure"},
    {RestartPolicy::kAlways, "Always"},
    {RestartPolicy::kExitCode, "ExitCode"},
}};
constexpr NameTable<CleanPodPolicy, 3> kCleanPodPolicyNames = {{
    {CleanPodPolicy::kAll, "All"},
    {CleanPodPolicy::kRunning, "Running"},
    {CleanPodPolicy::kNone, "None"},
}};
constexpr NameTable<ReplacementPolicy, 2> kReplacementPolicyNames = {{
    {ReplacementPolicy::kTerminatingOrFailed, "TerminatingOrFailed"},
    {ReplacementPolicy::kFailed, "Failed"},
}};

}  // namespace

std::string_view ReplicaTypeName(ReplicaType type) { return NameOf(kReplicaTypeNames, type); }
std::string_view ReplicaTypeLowerName(ReplicaType type) {
  return NameOf(kReplicaTypeLowerNames, type);
}
std::optional<ReplicaType> ParseReplicaType(std::string_view name) {
  return Parse(kReplicaTypeNames, name);
}
std::vector<std::string_view> ReplicaTypeNames() { return NamesOf(kReplicaTypeNames); }

std::string_view RestartPolicyName(RestartPolicy policy) {
  return NameOf(kRestartPolicyNames, policy);
}
std::optional<RestartPolicy> ParseRestartPolicy(std::string_view name) {
  return Parse(kRestartPolicyNames, name);
}
std::vector<std::string_view> RestartPolicyNames() { return NamesOf(kRestartPolicyNames); }

std::string_view CleanPodPolicyName(CleanPodPolicy policy) {
  return NameOf(kCleanPodPolicyNames, policy);
}
std::optional<CleanPodPolicy> ParseCleanPodPolicy(std::string_view name) {
  return Parse(kCleanPodPolicyNames, name);
}
std::vector<std::string_view> CleanPodPolicyNames() { return NamesOf(kCleanPodPolicyNames); }

std::string_view ReplacementPolicyName(ReplacementPolicy policy) {
  return NameOf(kReplacementPolicyNames, policy);
}
std::optional<ReplacementPolicy> ParseReplacementPolicy(std::string_view name) {
  return Parse(kReplacementPolicyNames, name);
}
std::vector<std::string_view> ReplacementPolicyNames() {
  return NamesOf(kReplacementPolicyNames);
}

}  // namespace tj::v1alpha1
