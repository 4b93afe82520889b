// The coordinator's consistent checkpoint of a parameter-server job: with training paused (every
// scheduled step joined), each PS task writes its whole state to a shard file in a new checkpoint
// directory, and the manifest, written last, seals the shards with the coordinator's state (the
// step, hence the data consumed). Restoring loads the newest checkpoint that verifies into every
// PS task, skipping a corrupt or truncated one for the one before.
//
// Incremental checkpoints (`full_every` > 1): after a full save, each PS writes only the embedding
// rows changed since the previous checkpoint (dense variables whole unless not pushed since, when
// they are only named and restored from the earlier file), and every `full_every`-th
// checkpoint is full again. A checkpoint's manifest lists the full save and the deltas it builds
// on (in earlier checkpoints' directories), so verifying it verifies its whole chain, retention
// keeps what it needs, and a restore reads the full save, then each delta.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/checkpoint/checkpoint_location.h"
#include "coordinator/checkpoint/checkpoint_store.h"
#include "coordinator/ps/ps_client.h"
#include "nlohmann/json.hpp"

namespace tj::sdk {

struct SavedCheckpoint {
  int64_t step = 0;
  std::string dir;
  int64_t bytes = 0;
  absl::Duration took;
  int deltas = 0;  // PS tasks that wrote only their changed rows (incremental checkpoints)
  // The embedding tables' part: their bytes on every PS, and the slowest PS's time from its first
  // table record to its file's fsync.
  int64_t table_bytes = 0;
  absl::Duration table_took;
};

struct RestoredCheckpoint {
  int64_t step = 0;
  std::string dir;
  nlohmann::json state;
  // Newer checkpoints whose restore a PS refused (DataLoss naming a file), newest first. Those
  // passed over because their chain lists a file found bad in one of them are not attempts.
  std::vector<std::string> skipped;
};

class PsCheckpointer {
 public:
  // Shard files live on the PS tasks' file systems at the store's paths, so `dir` must be the same
  // directory for the coordinator and every PS (one machine, or a shared volume on Kubernetes), or
  // an s3://bucket/prefix location every one of them reaches (OpenCheckpointLocation; an error
  // opening it is returned by Save and RestoreLatest).
  // `full_every`: 1 (or less) writes every checkpoint whole.
  PsCheckpointer(std::string dir, int keep, std::vector<std::shared_ptr<PsClient>> ps_tasks,
                 int full_every = 1);

  const std::string& dir() const { return dir_; }

  // "ps-<task>-of-<num_ps>.state".
  static std::string ShardName(int task, int num_ps);
  // The key of a checkpoint's state holding the id of its PS saves (what a delta is made since).
  static constexpr char kSaveIdKey[] = "ps_save_id";

  // The caller has paused training. Errors from a PS carry its task (PsTaskOf); a failed save
  // leaves no directory that a restore could take for a checkpoint.
  absl::StatusOr<SavedCheckpoint> Save(int64_t step, const nlohmann::json& state);

  // Restores the newest checkpoint that verifies into every PS task; nullopt when there is none.
  // A checkpoint whose shard, or a delta or full save of whose chain, a PS finds corrupt or missing
  // (DataLoss naming the file) is skipped, as one whose manifest does not verify is, for the newest
  // one whose chain does not list that file: one more restore, not one per checkpoint in between.
  // FailedPrecondition when it was taken with another number of PS tasks. `check_state`, when
  // given, sees the checkpoint's state and directory before any PS is touched; its error is
  // returned as is (e.g. another placement of the variables).
  using StateCheck =
      std::function<absl::Status(const nlohmann::json& state, const std::string& dir)>;
  absl::StatusOr<std::optional<RestoredCheckpoint>> RestoreLatest(
      const StateCheck& check_state = nullptr);

 private:
  // Restores `checkpoint` into every PS task, each checking the digest of every file of its chain
  // (full save, then deltas) as it reads it. On success, the next save builds on it.
  absl::Status RestoreInto(const Checkpoint& checkpoint, const StateCheck& check_state);

  absl::StatusOr<CheckpointLocation*> Location() const;

  const std::string dir_;
  const absl::StatusOr<std::unique_ptr<CheckpointLocation>> location_;
  std::vector<std::shared_ptr<PsClient>> ps_;
  const int full_every_;
  // The newest checkpoint this coordinator saved or restored: its saves' id (0: none, so the next
  // save is full) and, per PS task, the files a restore of it reads, full save first, with their
  // checkpoint's step.
  uint64_t last_save_id_ = 0;
  std::vector<std::vector<ManifestShard>> chains_;
};

}  // namespace tj::sdk
