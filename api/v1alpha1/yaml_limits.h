// Bounds a YAML text before yaml-cpp builds a node graph of it: one pass over its parse events
// counts nodes with every alias expanded, so an alias bomb ("a: &a [*a, *a]", nine levels of
// "[*b, *b, ...]") or a huge flat document is refused in time proportional to its size, at the
// line of the alias that crosses a limit, instead of growing the converted JSON without bound.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "api/v1alpha1/field_error.h"

namespace tj::v1alpha1 {

// A manifest is a few kilobytes; the API server refuses request bodies above 3 MiB.
inline constexpr size_t kMaxManifestBytes = size_t{3} << 20;
// Deeper input is refused: a TrainingJob with its pod templates is about 15 levels deep.
inline constexpr int kMaxYamlDepth = 100;
// A manifest uses a handful of aliases (shared env, resources); bombs use thousands.
inline constexpr size_t kMaxYamlAliases = 1000;
// Nodes of the whole text once every alias is expanded (a TrainingJob has a few hundred).
inline constexpr size_t kMaxYamlNodes = 100'000;
// Scalar bytes once every alias is expanded: an anchored long string aliased many times.
inline constexpr size_t kMaxYamlExpandedBytes = size_t{16} << 20;

// The first limit `text` crosses (size, depth, aliases, expansion, a recursive alias), at its
// line and column; nullopt when it stays within them. Syntax errors are left to the parser proper
// (they are reported as nullopt here).
std::optional<FieldError> CheckYamlLimits(std::string_view text);

}  // namespace tj::v1alpha1
