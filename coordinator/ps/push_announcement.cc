#include "coordinator/ps/push_announcement.h"

#include "absl/strings/numbers.h"

namespace tj {

PushAnnouncement ParsePushAnnouncement(std::optional<std::string_view> header,
                                       int64_t max_message_bytes) {
  PushAnnouncement announcement;
  if (!header.has_value()) return announcement;
  int64_t bytes = 0;
  // (Debian's absl::string_view is Abseil's own, not std::string_view.)
  if (absl::SimpleAtoi(absl::string_view(header->data(), header->size()), &bytes) && bytes >= 0 &&
      bytes <= max_message_bytes) {
    announcement.kind = PushAnnouncement::Kind::kAnnounced;
    announcement.bytes = bytes;
    return announcement;
  }
  announcement.kind = PushAnnouncement::Kind::kMalformed;
  // Bounded: the error goes to the peer and to logs.
  announcement.text = std::string(header->substr(0, kMaxQuotedAnnouncement));
  return announcement;
}

}  // namespace tj
