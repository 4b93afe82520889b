// Streams a local file into an object and an object into a local file, a bounded buffer at a time,
// computing the size and CRC-32C on the way: how a parameter server's shard file reaches an
// s3:// checkpoint and comes back for a restore, without ever holding the whole shard in memory.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "coordinator/checkpoint/file_digest.h"
#include "coordinator/checkpoint/object_store.h"

namespace tj {

// Uploads `path` to `key` (visible only once whole) and returns the digest of what was sent.
absl::StatusOr<FileDigest> UploadFile(ObjectStore& store, const std::string& path,
                                      std::string_view key);

// The digest of an object, read through once with ranged reads. NotFound when it is absent.
absl::StatusOr<FileDigest> ComputeObjectDigest(ObjectStore& store, std::string_view key);

// Downloads `key` to `path` atomically (AtomicFile). With `expected`, a size or CRC-32C that
// differs is DataLoss naming the object, and nothing is left at `path`.
absl::Status DownloadFile(ObjectStore& store, std::string_view key, const std::string& path,
                          std::optional<FileDigest> expected = std::nullopt);

}  // namespace tj
