#include "coordinator/checkpoint/retention.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"

namespace tj {

RetentionPlan PlanRetention(const std::vector<CheckpointListing>& listings, int64_t committed_step,
                            int keep,
                            const std::function<absl::StatusOr<Manifest>(int64_t)>& read_manifest) {
  RetentionPlan plan;
  int64_t newest_committed = committed_step;
  int kept = 0;
  std::vector<int64_t> beyond;
  std::set<int64_t> needed;  // steps holding files of a retained (incremental) checkpoint
  // Newest first, so the first `keep` committed ones are the ones retained.
  for (auto it = listings.rbegin(); it != listings.rend(); ++it) {
    if (!it->committed) continue;
    newest_committed = std::max(newest_committed, it->step);
    if (it->step == committed_step || kept < keep) {
      ++kept;
      if (absl::StatusOr<Manifest> manifest = read_manifest(it->step); manifest.ok()) {
        for (const ManifestShard& shard : manifest->shards) {
          if (shard.checkpoint_step >= 0) needed.insert(shard.checkpoint_step);
        }
      }
      continue;
    }
    beyond.push_back(it->step);
  }
  for (const int64_t step : beyond) {
    if (needed.contains(step)) {
      plan.kept_for_chains.push_back(step);
    } else {
      plan.beyond_keep.push_back({step, absl::StrCat("beyond the newest ", keep)});
    }
  }
  for (const CheckpointListing& listing : listings) {
    if (!listing.committed && listing.step < newest_committed) {
      plan.unfinished.push_back(listing.step);
    }
  }
  return plan;
}

}  // namespace tj
