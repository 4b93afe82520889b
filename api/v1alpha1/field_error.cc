#include "api/v1alpha1/field_error.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace tj::v1alpha1 {
namespace {

// A manifest value echoed in a message is there to be recognised, not reproduced in full.
constexpr size_t kMaxEchoedValueBytes = 80;

std::string Compact(const nlohmann::json& scalar) {
  return scalar.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Compact JSON of `value` into `out`, stopping once `out` passes the echo limit: the cost and the
// recursion depth are bounded by the limit (every level adds a bracket), not by the value, which
// may be megabytes or thousands of levels deep.
void EchoInto(const nlohmann::json& value, std::string& out) {
  if (!value.is_structured()) {
    out += Compact(value);
    return;
  }
  out += value.is_array() ? '[' : '{';
  bool first = true;
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (out.size() > kMaxEchoedValueBytes) return;
    if (!first) out += ',';
    first = false;
    if (value.is_object()) absl::StrAppend(&out, Compact(it.key()), ":");
    EchoInto(it.value(), out);
  }
  out += value.is_array() ? ']' : '}';
}

std::string Echo(const nlohmann::json& value) {
  std::string text;
  EchoInto(value, text);
  if (text.size() > kMaxEchoedValueBytes)
    text = absl::StrCat(text.substr(0, kMaxEchoedValueBytes), "...");
  return text;
}

// Map keys holding dots or slashes (label names) are bracketed so the path stays unambiguous.
bool IsPlainName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && c != '_' && c != '-') return false;
  }
  return true;
}

}  // namespace

std::string ChildPath(std::string_view parent, std::string_view name) {
  if (parent.empty()) return std::string(name);
  if (!IsPlainName(name)) return KeyPath(parent, name);
  return absl::StrCat(std::string(parent), ".", std::string(name));
}

std::string IndexPath(std::string_view parent, size_t index) {
  return absl::StrCat(std::string(parent), "[", index, "]");
}

std::string KeyPath(std::string_view parent, std::string_view key) {
  return absl::StrCat(std::string(parent), "[", std::string(key), "]");
}

FieldError RequiredError(std::string field, std::string_view detail) {
  std::string message = "Required value";
  if (!detail.empty()) absl::StrAppend(&message, ": ", std::string(detail));
  return {std::move(field), std::move(message)};
}

FieldError InvalidError(std::string field, const nlohmann::json& value, std::string_view detail) {
  return {std::move(field),
          absl::StrCat("Invalid value: ", Echo(value), ": ", std::string(detail))};
}

FieldError NotSupportedError(std::string field, const nlohmann::json& value,
                             const std::vector<std::string_view>& supported) {
  std::vector<std::string> quoted;
  for (std::string_view s : supported) quoted.push_back(absl::StrCat("\"", std::string(s), "\""));
  return {std::move(field), absl::StrCat("Unsupported value: ", Echo(value),
                                         ": supported values: ", absl::StrJoin(quoted, ", "))};
}

FieldError DuplicateError(std::string field, const nlohmann::json& value) {
  return {std::move(field), absl::StrCat("Duplicate value: ", Echo(value))};
}

FieldError ForbiddenError(std::string field, std::string_view detail) {
  return {std::move(field), absl::StrCat("Forbidden: ", std::string(detail))};
}

FieldError TooManyError(std::string field, size_t actual, size_t max) {
  return {std::move(field),
          absl::StrCat("Too many: ", actual, ": must have at most ", max, " items")};
}

FieldError TooLongError(std::string field, size_t actual, size_t max, std::string_view detail) {
  std::string message = absl::StrCat("Too long: must have at most ", max, " bytes, has ", actual);
  if (!detail.empty()) absl::StrAppend(&message, ": ", std::string(detail));
  return {std::move(field), std::move(message)};
}

FieldError UnknownFieldError(std::string field) {
  return {std::move(field), "unknown field (not in the TrainingJob schema)"};
}

FieldError TextError(int line, int column, std::string message) {
  return {"", std::move(message), line, column};
}

std::string FormatFieldError(std::string_view source, const FieldError& error) {
  const std::string src(source);
  if (!error.field.empty()) return absl::StrCat(src, ": ", error.field, ": ", error.message);
  if (error.line > 0) {
    return absl::StrCat(src, ":", error.line, ":", error.column, ": ", error.message);
  }
  return absl::StrCat(src, ": ", error.message);
}

std::string FormatFieldErrors(std::string_view source, const FieldErrors& errors) {
  std::vector<std::string> lines;
  lines.reserve(errors.size());
  for (const FieldError& e : errors) lines.push_back(FormatFieldError(source, e));
  return absl::StrJoin(lines, "\n");
}

}  // namespace tj::v1alpha1
