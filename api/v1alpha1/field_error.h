// FieldError: one problem found in a TrainingJob manifest, named by its Kubernetes-style field path
// ("spec.replicaSpecs.Worker.replicas", "...containers[0].image") or, for text that does not parse,
// by line and column. Messages follow the API server's wording so both sides read the same.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json_fwd.hpp"

namespace tj::v1alpha1 {

struct FieldError {
  // Empty for problems with the text itself (syntax, encoding, several documents).
  std::string field;
  std::string message;
  // 1-based position in the source text; 0 when the problem has no position.
  int line = 0;
  int column = 0;

  friend bool operator==(const FieldError&, const FieldError&) = default;
};

using FieldErrors = std::vector<FieldError>;

// Field paths, as Kubernetes' field.Path prints them.
std::string ChildPath(std::string_view parent, std::string_view name);  // "a.b"
std::string IndexPath(std::string_view parent, size_t index);           // "a[3]"
std::string KeyPath(std::string_view parent, std::string_view key);  // "a[app.kubernetes.io/name]"

// The API server's error types ("Required value", "Invalid value: 3: detail", ...).
FieldError RequiredError(std::string field, std::string_view detail = "");
FieldError InvalidError(std::string field, const nlohmann::json& value, std::string_view detail);
FieldError NotSupportedError(std::string field, const nlohmann::json& value,
                             const std::vector<std::string_view>& supported);
FieldError DuplicateError(std::string field, const nlohmann::json& value);
FieldError ForbiddenError(std::string field, std::string_view detail);
// "Too many: 33: must have at most 32 items".
FieldError TooManyError(std::string field, size_t actual, size_t max);
// "Too long: must have at most 65536 bytes, has 70000: <detail>".
FieldError TooLongError(std::string field, size_t actual, size_t max, std::string_view detail = "");
FieldError UnknownFieldError(std::string field);
FieldError TextError(int line, int column, std::string message);

// "job.yaml: spec.replicaSpecs: Required value", or "job.yaml:3:7: <message>" for text problems.
std::string FormatFieldError(std::string_view source, const FieldError& error);
// Every error on its own line, formatted as above.
std::string FormatFieldErrors(std::string_view source, const FieldErrors& errors);

}  // namespace tj::v1alpha1
