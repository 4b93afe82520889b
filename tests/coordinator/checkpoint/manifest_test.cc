// MANIFEST.json from storage is outside input: a manifest nested past kMaxManifestDepth is refused
// before its checksum is computed (which recursed once per level and overflowed the stack, found by
// checkpoint_manifest_fuzzer), and a state that deep is refused when written, so every manifest
// written reads back.
#include "coordinator/checkpoint/manifest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace tj {
namespace {

using ::testing::HasSubstr;

nlohmann::json Nested(int depth) {
  nlohmann::json value = nlohmann::json::array();
  for (int i = 1; i < depth; ++i) value = nlohmann::json::array({std::move(value)});
  return value;
}

TEST(ManifestTest, ADeeplyNestedManifestIsDataLossNotAStackOverflow) {
  const std::string text =
      "{\"manifest_crc32c\": 1, \"state\": {\"x\": " + std::string(100000, '[') +
      std::string(100000, ']') + "}}";
  absl::StatusOr<Manifest> parsed = ParseManifest(text);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("nested deeper than 100 levels"));
}

TEST(ManifestTest, StateUpToTheDepthLimitRoundTripsAndDeeperIsRefusedWhenWritten) {
  Manifest manifest;
  manifest.step = 7;
  manifest.created_time = "2024-05-01T12:00:00Z";
  // The manifest is level 1, the state object level 2: "x" may add kMaxManifestDepth - 2.
  manifest.state = {{"x", Nested(kMaxManifestDepth - 2)}};
  absl::StatusOr<std::string> written = SerializeManifest(manifest);
  ASSERT_TRUE(written.ok()) << written.status();
  absl::StatusOr<Manifest> read = ParseManifest(*written);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->state, manifest.state);

  manifest.state = {{"x", Nested(kMaxManifestDepth - 1)}};
  written = SerializeManifest(manifest);
  ASSERT_FALSE(written.ok());
  EXPECT_EQ(written.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(written.status().message()), HasSubstr("nests deeper than"));
}

TEST(ManifestTest, FilesOfEarlierCheckpointsRoundTripAndLaterOnesAreRefused) {
  Manifest manifest;
  manifest.step = 30;
  manifest.created_time = "2024-05-01T12:00:00Z";
  // An incremental checkpoint: its own delta, the delta of step 20 and the full save of step 10,
  // all under one name.
  manifest.shards = {{"ps-0-of-1.state", {10, 1}, -1},
                     {"ps-0-of-1.state", {20, 2}, 20},
                     {"ps-0-of-1.state", {30, 3}, 10}};
  absl::StatusOr<std::string> written = SerializeManifest(manifest);
  ASSERT_TRUE(written.ok()) << written.status();
  absl::StatusOr<Manifest> read = ParseManifest(*written);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->shards.size(), 3u);
  EXPECT_EQ(read->shards[0].checkpoint_step, -1);
  EXPECT_EQ(read->shards[1].checkpoint_step, 20);
  EXPECT_EQ(read->shards[2].checkpoint_step, 10);
  EXPECT_EQ(read->shards[2].digest.bytes, 30u);

  manifest.shards.push_back({"ps-0-of-1.state", {1, 1}, 20});  // twice from step 20
  EXPECT_THAT(std::string(SerializeManifest(manifest).status().message()),
              HasSubstr("listed twice"));
  manifest.shards.back().checkpoint_step = 30;  // not earlier than the checkpoint itself
  EXPECT_EQ(SerializeManifest(manifest).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tj
