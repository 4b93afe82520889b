// Checkpoint metrics of a coordinator (docs/metrics.md): save and restore durations as
// histograms, the newest checkpoint's size, time and age, and whether training resumed from one.
// Nothing is exported before the first event, so a coordinator without a checkpoint yet shows no
// age rather than a made-up one.
#pragma once

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"
#include "coordinator/metrics/metrics_registry.h"

namespace tj {

class CheckpointMetrics {
 public:
  // Registers a collector for tj_checkpoint_age_seconds; `registry` must outlive this object or
  // have its collectors removed first.
  explicit CheckpointMetrics(MetricsRegistry* registry);

  // A checkpoint of `bytes` was saved in `took`, completing at `at`.
  void Saved(absl::Duration took, int64_t bytes, absl::Time at);
  // The restore at start took `took`. `written_at` is when the restored checkpoint was saved
  // (InfinitePast if unknown: an older checkpoint); with `found` false, none was there.
  void Restored(absl::Duration took, bool found, absl::Time written_at, absl::Time at);

 private:
  void SetNewest(absl::Time written_at);

  MetricsRegistry* registry_;
  // Unix seconds of the newest checkpoint; 0 while there is none.
  std::atomic<double> newest_unix_{0};
};

}  // namespace tj
