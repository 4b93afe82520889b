// Turns configuration text (TF_CONFIG, a serialized ClusterSpec) into a JSON value, reporting bad
// input as InvalidArgument with the parser's line/column instead of letting an exception escape.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace tj {

// Deeper input than this is refused before it is built: a TF_CONFIG is three levels deep, and
// some consumers of a parsed value (printing, comparison) recurse.
inline constexpr int kMaxJsonNesting = 64;

// `source_name` (e.g. "TF_CONFIG") starts every error message.
absl::StatusOr<nlohmann::json> ParseJsonText(std::string_view text, std::string_view source_name);

}  // namespace tj
