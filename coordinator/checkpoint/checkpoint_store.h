// The checkpoints of one job on disk: directories `<dir>/ckpt-<step, 12 digits>/` holding shard
// files and, written last and atomically, MANIFEST.json. A directory without a manifest is a save
// that never finished; one whose shards do not match their manifest is skipped for an older one.
// Coordinators are fenced by generation (coordinator_generation.h): the store remembers the newest
// one that used it (<dir>/COORDINATOR_GENERATION) and refuses older ones, and a save in progress
// records its writer's generation (<ckpt>/WRITER_GENERATION) so nobody older removes it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/checkpoint/file_digest.h"
#include "coordinator/checkpoint/manifest.h"
#include "nlohmann/json.hpp"

namespace tj {

inline constexpr int64_t kMaxCheckpointStep = 999'999'999'999;  // 12 digits
inline constexpr char kStoreGenerationFileName[] = "COORDINATOR_GENERATION";
inline constexpr char kWriterGenerationFileName[] = "WRITER_GENERATION";

// A committed checkpoint whose manifest parsed and whose shards all matched it.
struct Checkpoint {
  int64_t step = 0;
  std::string dir;
  std::string created_time;
  nlohmann::json state;
  std::vector<ManifestShard> shards;

  std::string ShardPath(std::string_view name) const;
  // Where `shard` is: in this checkpoint's directory, or in an earlier one's (checkpoint_step).
  std::string FilePath(const ManifestShard& shard) const;
};

// A checkpoint directory as found on disk, before any verification.
struct CheckpointListing {
  int64_t step = 0;
  std::string dir;
  bool committed = false;  // has a MANIFEST.json
};

class CheckpointWriter;

// How much of each shard a verification reads: only its size (for a reader that checks the CRC
// itself as it reads the shard, as a PS restoring it does), or the whole file.
enum class ShardCheck { kSizeAndCrc, kSizeOnly };

// The newest coordinator generation that claimed the checkpoint directory `dir`
// (<dir>/COORDINATOR_GENERATION); 0 when none has, or the file is unreadable.
uint64_t ClaimedGeneration(const std::string& dir);

// Not thread-safe: one coordinator drives saves and restores, one at a time.
class CheckpointStore {
 public:
  // `keep` below 1 is taken as 1: the newest checkpoint is never deleted by retention.
  // `generation`: the coordinator's (0: none, a process started by hand).
  CheckpointStore(std::string dir, int keep, uint64_t generation = 0);

  const std::string& dir() const { return dir_; }
  int keep() const { return keep_; }
  uint64_t generation() const { return generation_; }

  // Records this store's generation as the newest to use the directory; FailedPrecondition
  // naming both generations when a newer coordinator has claimed it already. BeginCheckpoint and
  // Commit claim; a coordinator claims before it restores, so its predecessor stops saving.
  absl::Status Claim() const;

  // Creates `<dir>/ckpt-<step>/`. A leftover directory for the same step is replaced when it is
  // incomplete (and not being written by a newer generation) or fails verification; a valid
  // committed one is AlreadyExists.
  absl::StatusOr<std::unique_ptr<CheckpointWriter>> BeginCheckpoint(int64_t step);

  // The newest checkpoint older than `before_step` that verifies (manifest parses, every shard has
  // its size and, with kSizeAndCrc, its CRC-32C). Each one skipped is logged as a warning naming
  // the file and expected vs actual. nullopt when there is no committed checkpoint at all (before
  // `before_step`); DataLoss when there are some but none verifies, so a job never silently starts
  // over.
  absl::StatusOr<std::optional<Checkpoint>> LatestValid(
      ShardCheck check = ShardCheck::kSizeAndCrc,
      int64_t before_step = kMaxCheckpointStep + 1) const;

  // Reads and verifies the checkpoint of `step`: NotFound without a manifest, DataLoss naming the
  // problem otherwise.
  absl::StatusOr<Checkpoint> Load(int64_t step, ShardCheck check = ShardCheck::kSizeAndCrc) const;

  // Every checkpoint directory, committed or not, oldest first. Other entries are ignored. An
  // absent store directory lists as empty.
  absl::StatusOr<std::vector<CheckpointListing>> List() const;

 private:
  friend class CheckpointWriter;
  // Retention after `committed_step` was committed: committed checkpoints beyond the newest keep()
  // (never `committed_step` itself, nor one holding files a kept checkpoint lists: an incremental
  // checkpoint's full save and deltas) and incomplete directories older than the newest committed
  // one.
  void RemoveStale(int64_t committed_step) const;
  // The manifest of `step`, parsed but its shards not verified.
  absl::StatusOr<Manifest> ReadManifest(int64_t step) const;

  const std::string dir_;
  const int keep_;
  const uint64_t generation_;
};

// One save in progress. Shard files may be written by this process or by others (each parameter
// server writes its own) at the paths ShardPath() gives; Commit() seals the set.
class CheckpointWriter {
 public:
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;
  // An uncommitted save is removed, so a failed attempt leaves nothing behind.
  ~CheckpointWriter();

  int64_t step() const { return step_; }
  const std::string& dir() const { return dir_; }

  // Where shard `name` goes; InvalidArgument for a name that is not a plain file name.
  absl::StatusOr<std::string> ShardPath(std::string_view name) const;

  // Checks each listed shard exists with the digest's size, writes MANIFEST.json atomically (the
  // moment the checkpoint exists), then deletes checkpoints beyond the newest `keep` and stale
  // incomplete directories. `state` must be a JSON object. `earlier`: files of earlier checkpoints
  // this one needs (an incremental checkpoint's full save and deltas), listed in its manifest so
  // that a restore verifies them and retention keeps them. A failure to clean up is logged, not
  // returned: the checkpoint is committed by then.
  absl::Status Commit(const nlohmann::json& state, const std::map<std::string, FileDigest>& shards,
                      const std::vector<ManifestShard>& earlier = {});

 private:
  friend class CheckpointStore;
  CheckpointWriter(const CheckpointStore& store, int64_t step, std::string dir);

  const CheckpointStore store_;  // a copy, so the writer does not depend on the store outliving it
  const int64_t step_;
  const std::string dir_;
  bool committed_ = false;
};

}  // namespace tj
