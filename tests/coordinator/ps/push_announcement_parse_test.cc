// The parser of a push's announced size (tj-push-bytes) on its own: what it accepts, what it
// refuses, and that a refused value is quoted bounded (fuzz/push_announcement_fuzzer.cc fuzzes it).
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "coordinator/ps/push_announcement.h"

namespace tj {
namespace {

using Kind = PushAnnouncement::Kind;
constexpr int64_t kMax = 1000;

TEST(ParsePushAnnouncementTest, ADecimalSizeWithinTheLargestMessageIsAnnounced) {
  for (const auto& [text, bytes] :
       {std::pair<std::string, int64_t>{"0", 0}, {"1000", 1000}, {"17", 17}}) {
    const PushAnnouncement parsed = ParsePushAnnouncement(text, kMax);
    EXPECT_EQ(parsed.kind, Kind::kAnnounced) << text;
    EXPECT_EQ(parsed.bytes, bytes) << text;
  }
}

TEST(ParsePushAnnouncementTest, NoHeaderIsMissingNotMalformed) {
  EXPECT_EQ(ParsePushAnnouncement(std::nullopt, kMax).kind, Kind::kMissing);
  EXPECT_EQ(ParsePushAnnouncement("", kMax).kind, Kind::kMalformed) << "present but empty";
}

TEST(ParsePushAnnouncementTest, AnythingElseIsMalformedAndQuotedAtMost64Bytes) {
  for (const std::string text :
       {"1001", "-1", "1e3", "0x10", "12abc", "9223372036854775808", "99999999999999999999"}) {
    const PushAnnouncement parsed = ParsePushAnnouncement(text, kMax);
    EXPECT_EQ(parsed.kind, Kind::kMalformed) << text;
    EXPECT_EQ(parsed.text, text);
  }
  const PushAnnouncement long_one = ParsePushAnnouncement(std::string(5000, '7'), kMax);
  EXPECT_EQ(long_one.kind, Kind::kMalformed);
  EXPECT_EQ(long_one.text, std::string(kMaxQuotedAnnouncement, '7'));
}

}  // namespace
}  // namespace tj
