// How deeply JSON nests, measured without recursion. nlohmann's parser and destructor are
// iterative, but dump() and every decoder that walks a value recurse once per level, so text from
// outside is refused past a depth before it is parsed (JSON text) or walked (a parsed value).
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"

namespace tj {

// Whether `text` opens more than `max_depth` arrays or objects inside one another. Brackets inside
// strings do not count; text that is not JSON gives an answer its parser will not need.
inline bool JsonTextNestsDeeperThan(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
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
      if (++depth > max_depth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
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
