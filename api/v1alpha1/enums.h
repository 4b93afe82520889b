// The TrainingJob schema's enumerations (replica types, restart and clean-pod policies) with their
// manifest spellings, shared by the parser, the validator, the CRD text and the decision functions.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <vector>

namespace tj::v1alpha1 {

// Declaration order is the order replicas are listed, started and reported in.
enum class ReplicaType { kCoordinator, kPs, kWorker };
inline constexpr std::array<ReplicaType, 3> kReplicaTypes = {
    ReplicaType::kCoordinator, ReplicaType::kPs, ReplicaType::kWorker};

enum class RestartPolicy { kNever, kOnFailure, kAlways, kExitCode };
enum class CleanPodPolicy { kAll, kRunning, kNone };
// When a replica's replacement may start (Kubernetes Job's podReplacementPolicy): once its
// predecessor is terminating, or only once it has ended and is gone.
enum class ReplacementPolicy { kTerminatingOrFailed, kFailed };

// Manifest spellings: "Coordinator", "PS", "Worker".
std::string_view ReplicaTypeName(ReplicaType type);
// Pod-name spellings: "coordinator", "ps", "worker".
std::string_view ReplicaTypeLowerName(ReplicaType type);
std::optional<ReplicaType> ParseReplicaType(std::string_view name);
std::vector<std::string_view> ReplicaTypeNames();

std::string_view RestartPolicyName(RestartPolicy policy);
std::optional<RestartPolicy> ParseRestartPolicy(std::string_view name);
std::vector<std::string_view> RestartPolicyNames();

std::string_view CleanPodPolicyName(CleanPodPolicy policy);
std::optional<CleanPodPolicy> ParseCleanPodPolicy(std::string_view name);
std::vector<std::string_view> CleanPodPolicyNames();

std::string_view ReplacementPolicyName(ReplacementPolicy policy);
std::optional<ReplacementPolicy> ParseReplacementPolicy(std::string_view name);
std::vector<std::string_view> ReplacementPolicyNames();

}  // namespace tj::v1alpha1
