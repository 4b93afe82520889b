#include "api/v1alpha1/checkpoint_volume.h"

#include "api/v1alpha1/name_table.h"

namespace tj::v1alpha1 {
namespace {

constexpr NameTable<ClaimReclaimPolicy, 2> kReclaimPolicies = {{
    {ClaimReclaimPolicy::kRetain, "Retain"},
    {ClaimReclaimPolicy::kDelete, "Delete"},
}};
constexpr NameTable<VolumeAccessMode, 4> kAccessModes = {{
    {VolumeAccessMode::kReadWriteOnce, "ReadWriteOnce"},
    {VolumeAccessMode::kReadOnlyMany, "ReadOnlyMany"},
    {VolumeAccessMode::kReadWriteMany, "ReadWriteMany"},
    {VolumeAccessMode::kReadWriteOncePod, "ReadWriteOncePod"},
}};

}  // namespace

std::string_view ClaimReclaimPolicyName(ClaimReclaimPolicy policy) {
  return NameOf(kReclaimPolicies, policy);
}
std::optional<ClaimReclaimPolicy> ParseClaimReclaimPolicy(std::string_view name) {
  return Parse(kReclaimPolicies, name);
}
std::vector<std::string_view> ClaimReclaimPolicyNames() { return NamesOf(kReclaimPolicies); }
std::string_view VolumeAccessModeName(VolumeAccessMode mode) { return NameOf(kAccessModes, mode); }
std::optional<VolumeAccessMode> ParseVolumeAccessMode(std::string_view name) {
  return Parse(kAccessModes, name);
}
std::vector<std::string_view> VolumeAccessModeNames() { return NamesOf(kAccessModes); }

}  // namespace tj::v1alpha1
