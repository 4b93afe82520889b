// The parser of a push's announced body size (kPushBytesHeader, the `tj-push-bytes` request
// header): bytes from the pushing peer, parsed before anything else of the push is read, apart from
// gRPC so that it is fuzzed on its own (fuzz/push_announcement_fuzzer.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tj {

// What a push's kPushBytesHeader says.
struct PushAnnouncement {
  enum class Kind { kAnnounced, kMissing, kMalformed };
  Kind kind = Kind::kMissing;
  int64_t bytes = 0;  // kAnnounced: the body's size
  std::string text;   // kMalformed: the header's value, at most kMaxQuotedAnnouncement bytes of it
};

// How much of a malformed header an error quotes: the value is the peer's to fill.
inline constexpr size_t kMaxQuotedAnnouncement = 64;

// `header`: the header's value, nullopt when the push has none (kMissing). kMalformed unless it is
// a decimal number of bytes from 0 to `max_message_bytes`.
PushAnnouncement ParsePushAnnouncement(std::optional<std::string_view> header,
                                       int64_t max_message_bytes);

}  // namespace tj
