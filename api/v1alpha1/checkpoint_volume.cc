#include "api/v1alpha1/checkpoint_volume.h"

#include <array>
#include <utility>

namespace tj::v1alpha1 {
namespace {

constexpr std::array<std::pair<ClaimReclaimPolicy, std::string_view>, 2> kReclaimPolicies = {{
    {ClaimReclaimPolicy::kRetain, "Retain"},
    {ClaimReclaimPolicy::kDelete, "Delete"},
}};
constexpr std::array<std::pair<VolumeAccessMode, std::string_view>, 4> kAccessModes = {{
    {VolumeAccessMode::kReadWriteOnce, "ReadWriteOnce"},
    {VolumeAccessMode::kReadOnlyMany, "ReadOnlyMany"},
    {VolumeAccessMode::kReadWriteMany, "ReadWriteMany"},
    {VolumeAccessMode::kReadWriteOncePod, "ReadWriteOncePod"},
}};

template <typename Table, typename E>
std::string_view Name(const Table& table, E value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return "?";
}

template <typename E, typename Table>
std::optional<E> Parse(const Table& table, std::string_view name) {
  for (const auto& [v, n] : table) {
    if (n == name) return v;
  }
  return std::nullopt;
}

template <typename Table>
std::vector<std::string_view> Names(const Table& table) {
  std::vector<std::string_view> out;
  for (const auto& entry : table) out.push_back(entry.second);
  return out;
}

}  // namespace

std::string_view ClaimReclaimPolicyName(ClaimReclaimPolicy policy) {
  return Name(kReclaimPolicies, policy);
}
std::optional<ClaimReclaimPolicy> ParseClaimReclaimPolicy(std::string_view name) {
  return Parse<ClaimReclaimPolicy>(kReclaimPolicies, name);
}
std::vector<std::string_view> ClaimReclaimPolicyNames() { return Names(kReclaimPolicies); }
std::string_view VolumeAccessModeName(VolumeAccessMode mode) { return Name(kAccessModes, mode); }
std::optional<VolumeAccessMode> ParseVolumeAccessMode(std::string_view name) {
  return Parse<VolumeAccessMode>(kAccessModes, name);
}
std::vector<std::string_view> VolumeAccessModeNames() { return Names(kAccessModes); }

}  // namespace tj::v1alpha1
