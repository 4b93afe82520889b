// The size and CRC-32C of a whole file: what a checkpoint manifest records for each shard and what
// a restore checks before trusting one.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace tj {

struct FileDigest {
  uint64_t bytes = 0;
  uint32_t crc32c = 0;

  friend bool operator==(const FileDigest&, const FileDigest&) = default;
};

// "<bytes> bytes, crc32c 0x<8 hex digits>", for log lines and errors.
std::string ToString(const FileDigest& digest);

// Reads `path` through once, in large chunks.
absl::StatusOr<FileDigest> ComputeFileDigest(const std::string& path);

}  // namespace tj
