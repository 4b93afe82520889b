// A push's announced body size (the `tj-push-bytes` request header) as a PS reads it before
// anything else of the push (ParsePushAnnouncement). The first byte says whether the header is
// there (bit 0), the next eight are the PS's largest message (little-endian, sign bit cleared),
// the rest is the header's value.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

#include "coordinator/ps/push_announcement.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 9) return 0;
  const bool present = (data[0] & 1) != 0;
  uint64_t raw = 0;
  std::memcpy(&raw, data + 1, sizeof(raw));
  const auto max_message_bytes = static_cast<int64_t>(raw & ~(uint64_t{1} << 63));
  const std::string_view value(reinterpret_cast<const char*>(data + 9), size - 9);
  const tj::PushAnnouncement parsed = tj::ParsePushAnnouncement(
      present ? std::optional<std::string_view>(value) : std::nullopt, max_message_bytes);
  using Kind = tj::PushAnnouncement::Kind;
  // Missing exactly when absent; an accepted size is within [0, max] and written only in decimal
  // digits (with whitespace or a sign around them); a refused one is quoted, bounded.
  if ((parsed.kind == Kind::kMissing) != !present) __builtin_trap();
  if (parsed.kind == Kind::kAnnounced) {
    if (parsed.bytes < 0 || parsed.bytes > max_message_bytes || !parsed.text.empty()) {
      __builtin_trap();
    }
    if (value.find_first_not_of("0123456789+- \t\n\v\f\r") != std::string_view::npos) {
      __builtin_trap();
    }
  }
  if (parsed.kind == Kind::kMalformed &&
      parsed.text != value.substr(0, tj::kMaxQuotedAnnouncement)) {
    __builtin_trap();
  }
  return 0;
}
