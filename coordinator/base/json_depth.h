// How deeply JSON nests, measured without recursion. nlohmann's parser and destructor are
// iterative, but dump() and every decoder that walks a value recurse once per level, so text from
// outside is refused past a depth before it is parsed (JSON text) or walked (a parsed value).
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"

namespace tj {

// The byte offset at which `text` opens its (max_depth + 1)-th array or object inside one another,
// or nullopt. Brackets inside strings do not count, nor closings without an opening; text that is
// not JSON gives an answer its parser will not need.
inline std::optional<size_t> JsonTextDepthExceededAt(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

// Whether `text` opens more than `max_depth` arrays or objects inside one another.
inline bool JsonTextNestsDeeperThan(std::string_view text, int max_depth) {
  return JsonTextDepthExceededAt(text, max_depth).has_value();
}

// The same for a parsed value (an explicit stack, not recursion).
inline bool JsonValueNestsDeeperThan(const nlohmann::json& value, int max_depth) {
  std::vector<std::pair<const nlohmann::json*, int>> pending = {{&value, 0}};
  while (!pending.empty()) {
    const auto [node, depth] = pending.back();
    pending.pop_back();
    if (!node->is_structured()) continue;
    if (depth + 1 > max_depth) return true;
    for (const nlohmann::json& child : *node) pending.emplace_back(&child, depth + 1);
  }
  return false;
}

}  // namespace tj
