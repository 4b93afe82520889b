// Error-message helpers for parsing untrusted cluster configuration. They keep messages short and
// printable whatever arrives (binary garbage, megabyte strings), and keep the status code intact
// while a field path is prepended on the way out.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "coordinator/base/strings.h"
#include "nlohmann/json_fwd.hpp"

namespace tj {

// `text` in double quotes with C escapes, cut to a readable length.
std::string Quoted(std::string_view text);

// "object", "array", "string", "integer", "floating-point number", "boolean" or "null".
std::string_view JsonKindName(const nlohmann::json& value);

// The same status with "context: " in front of its message; OK stays OK.
absl::Status WithContext(const absl::Status& status, std::string_view context);

// "a.b" for a nested field, or just "b" when there is no parent path.
std::string FieldPath(std::string_view parent, std::string_view child);

}  // namespace tj
