// Where a job's checkpoints are kept, whichever the kind: a local (or shared-volume) directory, as
// CheckpointStore keeps them, or an s3://bucket/prefix location, as ObjectCheckpointStore does.
// The coordinator's checkpointer drives saves and restores through this, the same way for both; a
// parameter server is handed each shard's path (a file path, or an s3:// URL it uploads to).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/checkpoint/checkpoint_store.h"

namespace tj {

enum class CheckpointLocationKind { kDirectory, kS3 };

// One save in progress (CheckpointWriter, ObjectCheckpointWriter): dropped uncommitted, its files
// are removed.
class CheckpointSave {
 public:
  virtual ~CheckpointSave() = default;
  virtual const std::string& dir() const = 0;
  // Where the PS writes shard `name`: a path, or an s3:// URL.
  virtual absl::StatusOr<std::string> ShardPath(std::string_view name) const = 0;
  virtual absl::Status Commit(const nlohmann::json& state,
                              const std::map<std::string, FileDigest>& shards,
                              const std::vector<ManifestShard>& earlier) = 0;
};

class CheckpointLocation {
 public:
  virtual ~CheckpointLocation() = default;
  virtual CheckpointLocationKind kind() const = 0;
  virtual const std::string& dir() const = 0;
  // CheckpointStore::Claim for a directory; for S3 a check that the bucket exists and the
  // credentials are accepted (FailedPrecondition / PermissionDenied naming them), then
  // ObjectCheckpointStore::Claim.
  virtual absl::Status Claim() = 0;
  virtual absl::StatusOr<std::unique_ptr<CheckpointSave>> BeginCheckpoint(int64_t step) = 0;
  virtual absl::StatusOr<std::optional<Checkpoint>> LatestValid(ShardCheck check,
                                                                int64_t before_step) = 0;
};

// A directory (CheckpointStore) or, for an s3:// `dir`, a bucket with its endpoint and credentials
// from the environment (S3OptionsFromEnv: InvalidArgument naming what is missing).
absl::StatusOr<std::unique_ptr<CheckpointLocation>> OpenCheckpointLocation(std::string dir,
                                                                           int keep,
                                                                           uint64_t generation);

}  // namespace tj
