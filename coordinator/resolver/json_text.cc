#include "coordinator/resolver/json_text.h"

#include "absl/strings/str_cat.h"
#include "coordinator/base/json_depth.h"
#include "coordinator/resolver/diagnostics.h"

namespace tj {
namespace {

// A parser message can echo a whole offending token; a few hundred bytes locate the problem.
constexpr size_t kMaxParserMessageBytes = 300;

absl::Status CheckNesting(std::string_view text, std::string_view source_name) {
  if (const std::optional<size_t> at = JsonTextDepthExceededAt(text, kMaxJsonNesting)) {
    return absl::InvalidArgumentError(Cat(source_name, ": not valid JSON: nested deeper than ",
                                          kMaxJsonNesting, " levels at byte ", *at));
  }
  return absl::OkStatus();
}

// nlohmann prefixes "[json.exception.parse_error.101] "; the id means nothing to a reader.
std::string_view WithoutExceptionId(std::string_view what) {
  if (!what.empty() && what.front() == '[') {
    const size_t end = what.find("] ");
    if (end != std::string_view::npos) what.remove_prefix(end + 2);
  }
  return what.substr(0, kMaxParserMessageBytes);
}

}  // namespace

absl::StatusOr<nlohmann::json> ParseJsonText(std::string_view text, std::string_view source_name) {
  if (absl::Status nesting = CheckNesting(text, source_name); !nesting.ok()) return nesting;
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        Cat(source_name, ": not valid JSON: ", WithoutExceptionId(e.what())));
  }
}

}  // namespace tj
