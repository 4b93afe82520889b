// MANIFEST.json, the file that makes a checkpoint directory a checkpoint: written last, it names
// the step, the coordinator's free-form state and each shard file with its size and CRC-32C, and
// carries a checksum of its own content so a flipped byte in the state is caught too.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/checkpoint/file_digest.h"
#include "nlohmann/json.hpp"

namespace tj {

// Version 1: a checkpoint's own files. Version 2: also files of earlier checkpoints (an
// incremental checkpoint's chain), so a build that reads only version 1 refuses such a manifest
// instead of restoring its own files alone. A manifest is written with the lowest version that can
// say what it holds, so full checkpoints stay readable by older builds.
inline constexpr int kPlainManifestFormatVersion = 1;
inline constexpr int kManifestFormatVersion = 2;  // the newest this build reads and writes
inline constexpr char kManifestFileName[] = "MANIFEST.json";
// Arrays and objects inside one another, the state's included: a deeper manifest is refused when
// written and when read (the checksum and the state's users walk it recursively).
inline constexpr int kMaxManifestDepth = 100;

struct ManifestShard {
  std::string name;  // a file name inside the checkpoint directory
  FileDigest digest;
  // Incremental checkpoints: the step of the earlier checkpoint whose directory holds the file (a
  // full save or a delta this checkpoint builds on); -1 for a file of this checkpoint. A checkpoint
  // lists every file a restore of it reads, so verifying it verifies them all.
  int64_t checkpoint_step = -1;
};

struct Manifest {
  int64_t step = 0;
  std::string created_time;  // RFC 3339, UTC
  nlohmann::json state = nlohmann::json::object();
  std::vector<ManifestShard> shards;
};

// Shard names are plain file names: letters, digits, '.', '_', '-', not starting with '.', at most
// 200 bytes, and not the manifest's own name. InvalidArgument otherwise.
absl::Status CheckShardName(std::string_view name);

// Pretty-printed JSON. InvalidArgument when the state is not an object or holds invalid UTF-8, or
// a shard name is bad or repeated (within one checkpoint's files), or a shard's checkpoint_step is
// not earlier than the manifest's step.
absl::StatusOr<std::string> SerializeManifest(const Manifest& manifest);

// DataLoss saying what is wrong: not JSON (e.g. truncated), checksum mismatch, a missing or
// mistyped field, an unknown format version.
absl::StatusOr<Manifest> ParseManifest(std::string_view text);

}  // namespace tj
