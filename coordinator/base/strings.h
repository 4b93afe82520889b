// Bridges std::string_view and Debian's Abseil, which is built with its own absl::string_view:
// absl::StrCat does not take a std::string_view there. Use Cat() where arguments mix the two.
#pragma once

#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tj {

inline absl::string_view AbslView(std::string_view text) { return {text.data(), text.size()}; }
template <typename T>
const T& AbslView(const T& value) {
  return value;
}

// absl::StrCat that also takes std::string_view.
template <typename... Args>
std::string Cat(const Args&... args) {
  return absl::StrCat(AbslView(args)...);
}

}  // namespace tj
