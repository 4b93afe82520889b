// The coordinator's consistent checkpoint of a parameter-server job: with training paused (every
// scheduled step joined), each PS task writes its whole state to a shard file in a new checkpoint
// directory, and the manifest, written last, seals the shards with the coordinator's state (the
// step, hence the data consumed). Restoring loads the newest checkpoint that verifies into every
// PS task, skipping a corrupt or truncated one for the one before.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/checkpoint/checkpoint_store.h"
#include "coordinator/ps/ps_client.h"
#include "nlohmann/json.hpp"

namespace tj::sdk {

struct SavedCheckpoint {
  int64_t step = 0;
  std::string dir;
  int64_t bytes = 0;
  absl::Duration took;
};

struct RestoredCheckpoint {
  int64_t step = 0;
  std::string dir;
  nlohmann::json state;
};

class PsCheckpointer {
 public:
  // Shard files live on the PS tasks' file systems at the store's paths, so `dir` must be the same
  // directory for the coordinator and every PS (one machine, or a shared volume on Kubernetes).
  PsCheckpointer(std::string dir, int keep, std::vector<std::shared_ptr<PsClient>> ps_tasks);

  const std::string& dir() const { return store_.dir(); }

  // "ps-<task>-of-<num_ps>.state".
  static std::string ShardName(int task, int num_ps);

  // The caller has paused training. Errors from a PS carry its task (PsTaskOf); a failed save
  // leaves no directory that a restore could take for a checkpoint.
  absl::StatusOr<SavedCheckpoint> Save(int64_t step, const nlohmann::json& state);

  // Restores the newest checkpoint that verifies into every PS task; nullopt when there is none.
  // A checkpoint whose shard a PS finds corrupt (DataLoss naming the file) is skipped for the one
  // before, as one whose manifest does not verify is.
  // FailedPrecondition when it was taken with another number of PS tasks. `check_state`, when
  // given, sees the checkpoint's state and directory before any PS is touched; its error is
  // returned as is (e.g. another placement of the variables).
  using StateCheck =
      std::function<absl::Status(const nlohmann::json& state, const std::string& dir)>;
  absl::StatusOr<std::optional<RestoredCheckpoint>> RestoreLatest(
      const StateCheck& check_state = nullptr);

 private:
  // Restores `checkpoint` into every PS task, each checking its shard's digest as it reads it.
  absl::Status RestoreInto(const Checkpoint& checkpoint, const StateCheck& check_state);

  CheckpointStore store_;
  std::vector<std::shared_ptr<PsClient>> ps_;
};

}  // namespace tj::sdk
