#include "coordinator/resolver/diagnostics.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace tj {
namespace {

// Enough for any real host name or job name; longer input is garbage and only needs recognising.
constexpr size_t kMaxQuotedBytes = 80;

}  // namespace

std::string Quoted(std::string_view text) {
  if (text.size() <= kMaxQuotedBytes) return Cat("\"", absl::CHexEscape(AbslView(text)), "\"");
  return Cat("\"", absl::CHexEscape(AbslView(text.substr(0, kMaxQuotedBytes))), "\"... (",
             text.size(), " bytes)");
}

std::string_view JsonKindName(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::object:
      return "object";
    case nlohmann::json::value_t::array:
      return "array";
    case nlohmann::json::value_t::string:
      return "string";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return "integer";
    case nlohmann::json::value_t::number_float:
      return "floating-point number";
    case nlohmann::json::value_t::boolean:
      return "boolean";
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::binary:
    case nlohmann::json::value_t::discarded:
      break;
  }
  return "unsupported value";
}

absl::Status WithContext(const absl::Status& status, std::string_view context) {
  if (status.ok() || context.empty()) return status;
  return absl::Status(status.code(), Cat(context, ": ", status.message()));
}

std::string FieldPath(std::string_view parent, std::string_view child) {
  if (parent.empty()) return std::string(child);
  return Cat(parent, ".", child);
}

}  // namespace tj
