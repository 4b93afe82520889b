// MANIFEST.json from storage is outside input: a manifest nested past kMaxManifestDepth is refused
// before its checksum is computed (which recursed once per level and overflowed the stack, found by
// checkpoint_manifest_fuzzer), and a state that deep is refused when written, so every manifest
// written reads back.
#include "coordinator/checkpoint/manifest.h"

#include "coordinator/checkpoint/crc32c.h"

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

// `text` with its format version set to `version` and the checksum made to match, as the build that
// writes that version would.
std::string WithVersion(const std::string& text, int version) {
  nlohmann::json body = nlohmann::json::parse(text);
  body.erase("manifest_crc32c");
  body["format_version"] = version;
  const uint32_t checksum = crc32c::Value(body.dump());
  body["manifest_crc32c"] = checksum;
  return body.dump(2);
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
  // A chain needs version 2: a build reading only version 1 refuses it rather than restoring the
  // checkpoint's own delta alone. A version-1 manifest with a chain is another program's.
  EXPECT_THAT(*written, HasSubstr("\"format_version\": 2"));
  const absl::Status as_v1 = ParseManifest(WithVersion(*written, 1)).status();
  EXPECT_EQ(as_v1.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(as_v1.message()), HasSubstr("lists files of earlier checkpoints"));

  manifest.shards.push_back({"ps-0-of-1.state", {1, 1}, 20});  // twice from step 20
  EXPECT_THAT(std::string(SerializeManifest(manifest).status().message()),
              HasSubstr("listed twice"));
  manifest.shards.back().checkpoint_step = 30;  // not earlier than the checkpoint itself
  EXPECT_EQ(SerializeManifest(manifest).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ManifestTest, AFullCheckpointIsWrittenAsVersionOneAndANewerVersionIsRefusedByName) {
  Manifest manifest;
  manifest.step = 10;
  manifest.created_time = "2024-05-01T12:00:00Z";
  manifest.shards = {{"ps-0-of-1.state", {10, 1}, -1}};
  absl::StatusOr<std::string> written = SerializeManifest(manifest);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_THAT(*written, HasSubstr("\"format_version\": 1")) << "older builds read it";
  ASSERT_TRUE(ParseManifest(WithVersion(*written, 1)).ok()) << "the rewrite keeps it valid";

  const absl::Status newer = ParseManifest(WithVersion(*written, 3)).status();
  EXPECT_EQ(newer.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(newer.message()),
              HasSubstr("format version 3 is not supported (this build reads versions 1 to 2)"));
}

}  // namespace
}  // namespace tj
