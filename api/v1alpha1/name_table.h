// Enum <-> name tables for the API's enums (enums.cc, checkpoint_volume.cc): one spelling per
// value, matched exactly, as the API server's enum check and the CRD match.
#pragma once

#include <array>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace tj::v1alpha1 {

template <typename E, size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

template <typename E, size_t N>
std::string_view NameOf(const NameTable<E, N>& table, E value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return "?";
}

// Exact, case-sensitive match: the API server's enum check is, and the CRD must agree.
template <typename E, size_t N>
std::optional<E> Parse(const NameTable<E, N>& table, std::string_view name) {
  for (const auto& [v, n] : table) {
    if (n == name) return v;
  }
  return std::nullopt;
}

template <typename E, size_t N>
std::vector<std::string_view> NamesOf(const NameTable<E, N>& table) {
  std::vector<std::string_view> names;
  for (const auto& entry : table) names.push_back(entry.second);
  return names;
}

}  // namespace tj::v1alpha1
