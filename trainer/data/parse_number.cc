#include "trainer/data/parse_number.h"

#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace tj::train {
namespace {

// from_chars rejects a leading '+', which LibSVM labels ("+1") use.
std::string_view StripPlus(std::string_view text) {
  if (text.size() > 1 && text[0] == '+' && text[1] != '-' && text[1] != '+') text.remove_prefix(1);
  return text;
}

}  // namespace

std::string_view TrimSpaces(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool ParseFloat(std::string_view text, float& value) {
  text = StripPlus(TrimSpaces(text));
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end && std::isfinite(value);
}

bool ParseInt64(std::string_view text, int64_t& value) {
  text = StripPlus(TrimSpaces(text));
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  return ec == std::errc() && ptr == end;
}

bool ParseIntegralLabel(std::string_view text, int64_t& value) {
  if (ParseInt64(text, value)) return true;
  text = StripPlus(TrimSpaces(text));
  double d = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, d);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(d)) return false;
  if (d != std::floor(d) || std::fabs(d) > 2147483647.0) return false;
  value = static_cast<int64_t>(d);
  return true;
}

std::string QuoteCell(std::string_view text) {
  constexpr size_t kMax = 40;
  if (text.size() <= kMax) return absl::StrCat("\"", std::string(text), "\"");
  return absl::StrCat("\"", std::string(text.substr(0, kMax)), "...\"");
}

}  // namespace tj::train
