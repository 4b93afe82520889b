// The watch stream decoder against hostile streams: events are capped in size and in nesting, and
// every malformed line is an error naming the watch, never a crash.
#include "operator/kube/watch_decoder.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tj::kube {
namespace {

using ::testing::HasSubstr;

struct Decoded {
  absl::Status status;
  std::vector<std::string> types;
};

Decoded Decode(const std::string& body, size_t chunk, size_t max_event_bytes = 1 << 20) {
  Decoded out;
  WatchDecoder decoder("watch pods", max_event_bytes, [&out](WatchEvent event, bool&) {
    out.types.push_back(event.type);
    return absl::OkStatus();
  });
  for (size_t at = 0; at < body.size() && out.status.ok(); at += chunk) {
    out.status = decoder.Feed(std::string_view(body).substr(at, chunk));
  }
  if (out.status.ok()) out.status = decoder.Finish();
  return out;
}

TEST(WatchDecoderTest, EventsSplitAtEveryBoundaryDecodeAlike) {
  const std::string body =
      "{\"type\":\"ADDED\",\"object\":{\"a\":[1,{\"b\":\"}\\\"]\"}]}}\r\n"
      "{\"type\":\"DELETED\",\"object\":{}}\n";
  for (size_t chunk = 1; chunk <= body.size(); ++chunk) {
    Decoded d = Decode(body, chunk);
    ASSERT_TRUE(d.status.ok()) << chunk << ": " << d.status;
    EXPECT_THAT(d.types, ::testing::ElementsAre("ADDED", "DELETED"));
  }
}

// An event nested past the API server's own limit would overflow the stack of whatever serializes
// or walks it; it ends the watch as DataLoss before it is parsed.
TEST(WatchDecoderTest, AnEventNestedDeeperThanTheApiServerAllowsIsRefused) {
  const int depth = kMaxWatchEventDepth + 1;
  const std::string deep = "{\"type\":\"ADDED\",\"object\":{\"x\":" + std::string(depth, '[') +
                           std::string(depth, ']') + "}}\n";
  Decoded d = Decode(deep, 4096);
  EXPECT_EQ(d.status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(d.status.message()), HasSubstr("watch pods: watch event nested deeper"));
  EXPECT_TRUE(d.types.empty());

  // Brackets inside strings are text, not nesting.
  const std::string in_string =
      "{\"type\":\"ADDED\",\"object\":{\"x\":\"" + std::string(depth, '[') + "\"}}\n";
  EXPECT_TRUE(Decode(in_string, 4096).status.ok());
}

TEST(WatchDecoderTest, AnEventOverTheCapIsResourceExhausted) {
  Decoded d = Decode("{\"type\":\"ADDED\",\"object\":\"" + std::string(5000, 'x') + "\"}\n", 100,
                     /*max_event_bytes=*/4096);
  EXPECT_EQ(d.status.code(), absl::StatusCode::kResourceExhausted);
}

TEST(WatchDecoderTest, MalformedAndTruncatedEventsAreDataLoss) {
  EXPECT_EQ(Decode("not json\n", 3).status.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(Decode("{\"type\":1,\"object\":{}}\n", 3).status.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(Decode("{\"type\":\"ADDED\",\"obj", 3).status.code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace tj::kube
