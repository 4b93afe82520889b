// Turns YAML manifest text into the JSON the API server would receive for it, so one decoder and
// one validator serve tjctl (files) and the operator (API objects). Scalars resolve as kubectl's
// reader does (YAML 1.1: yes/no are booleans, 0644 is octal), so both read a manifest alike.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "api/v1alpha1/field_error.h"
#include "api/v1alpha1/yaml_limits.h"
#include "nlohmann/json.hpp"

namespace tj::v1alpha1 {

struct YamlDocument {
  nlohmann::json value;  // null when errors is not empty
  // Syntax errors, duplicate keys, unsupported tags, several documents: each with line:column.
  FieldErrors errors;
};

// Exactly one non-empty document is expected (JSON text is accepted too: YAML contains it). Text
// past the limits of yaml_limits.h (size, depth, aliases and their expansion) is refused first.
YamlDocument ParseYamlDocument(std::string_view text);

// The same, errors reported as InvalidArgument "source:line:column: message" (one per line).
absl::StatusOr<nlohmann::json> YamlToJson(std::string_view text, std::string_view source_name);

}  // namespace tj::v1alpha1
