// spec.checkpoint.volume: the PersistentVolumeClaim that holds a job's checkpoint directory, shared
// by the coordinator and every PS. Either an existing claim (claimName) or one the operator makes
// per job from claimTemplate; docs/trainingjob-schema.md has the rules, checkpoint_volume_json.h
// the decoding and validation.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tj::v1alpha1 {

// What happens to a claim the operator made when its job is deleted (StatefulSet's
// persistentVolumeClaimRetentionPolicy.whenDeleted). Never applies to a claim named by claimName.
enum class ClaimReclaimPolicy { kRetain, kDelete };
inline constexpr ClaimReclaimPolicy kDefaultClaimReclaimPolicy = ClaimReclaimPolicy::kRetain;

// A PersistentVolume access mode, spelled as Kubernetes spells it.
enum class VolumeAccessMode { kReadWriteOnce, kReadOnlyMany, kReadWriteMany, kReadWriteOncePod };

std::string_view ClaimReclaimPolicyName(ClaimReclaimPolicy policy);
std::optional<ClaimReclaimPolicy> ParseClaimReclaimPolicy(std::string_view name);
std::vector<std::string_view> ClaimReclaimPolicyNames();
std::string_view VolumeAccessModeName(VolumeAccessMode mode);
std::optional<VolumeAccessMode> ParseVolumeAccessMode(std::string_view name);
std::vector<std::string_view> VolumeAccessModeNames();

// The part of a PersistentVolumeClaim spec a job may give (claimTemplate).
struct CheckpointClaimTemplate {
  // Unset: the cluster's default StorageClass; "": a pre-provisioned volume of no class.
  std::optional<std::string> storage_class_name;
  std::optional<std::vector<VolumeAccessMode>> access_modes;  // default [ReadWriteMany]
  std::string storage;  // resources.requests.storage, a Kubernetes quantity ("10Gi")

  friend bool operator==(const CheckpointClaimTemplate&, const CheckpointClaimTemplate&) = default;
};

struct CheckpointVolume {
  std::optional<std::string> claim_name;                 // exactly one of these two
  std::optional<CheckpointClaimTemplate> claim_template;
  std::optional<ClaimReclaimPolicy> reclaim_policy;      // default Retain
  std::optional<std::string> mount_path;                 // unset: spec.checkpoint.dir

  friend bool operator==(const CheckpointVolume&, const CheckpointVolume&) = default;
};

}  // namespace tj::v1alpha1
