// Which checkpoints a store removes after a commit, decided once for every store (a directory, a
// bucket): the newest `keep` committed ones stay, and so does any older one whose files a kept
// incremental checkpoint lists; saves that never finished and are older than the newest commit go.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/checkpoint/checkpoint_store.h"
#include "coordinator/checkpoint/manifest.h"

namespace tj {

struct RetentionPlan {
  struct Removal {
    int64_t step = 0;
    std::string why;
    friend bool operator==(const Removal&, const Removal&) = default;
  };
  // Committed checkpoints beyond the newest `keep` that nothing kept builds on.
  std::vector<Removal> beyond_keep;
  // Committed checkpoints beyond the newest `keep` kept because a kept one lists their files.
  std::vector<int64_t> kept_for_chains;
  // Saves without a manifest, older than the newest committed checkpoint. The store decides
  // whether one may go (a directory store leaves a newer coordinator's save in progress).
  std::vector<int64_t> unfinished;
};

// `listings` in ascending step order (as the stores list them); `committed_step` is the checkpoint
// just committed, kept whatever `keep` says; a manifest that `read_manifest` cannot read keeps
// nothing alive (no one restores it).
RetentionPlan PlanRetention(const std::vector<CheckpointListing>& listings, int64_t committed_step,
                            int keep,
                            const std::function<absl::StatusOr<Manifest>(int64_t)>& read_manifest);

}  // namespace tj
