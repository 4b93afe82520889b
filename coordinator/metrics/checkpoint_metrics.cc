#include "coordinator/metrics/checkpoint_metrics.h"

#include <algorithm>
#include <vector>

#include "absl/time/clock.h"

namespace tj {
namespace {

// From a small job on a local disk to a multi-GB one on S3.
const std::vector<double>& DurationBuckets() {
  static const std::vector<double> buckets = {0.05, 0.1, 0.25, 0.5, 1,   2.5, 5,
                                              10,   30,  60,   120, 300, 600, 1800};
  return buckets;
}

}  // namespace

CheckpointMetrics::CheckpointMetrics(MetricsRegistry* registry) : registry_(registry) {
  registry_->AddCollector([this] {
    const double newest = newest_unix_.load();
    if (newest <= 0) return;
    // Never negative, even if the clock stepped back since.
    registry_->SetGauge("tj_checkpoint_age_seconds", "Time since the newest checkpoint was saved",
                        std::max(0.0, absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()) -
                                                          newest));
  });
}

void CheckpointMetrics::SetNewest(absl::Time written_at) {
  const double unix_seconds = absl::ToDoubleSeconds(written_at - absl::UnixEpoch());
  newest_unix_.store(unix_seconds);
  registry_->SetGauge("tj_checkpoint_last_timestamp_seconds",
                      "When the newest checkpoint was saved (Unix time)", unix_seconds);
}

void CheckpointMetrics::Saved(absl::Duration took, int64_t bytes, absl::Time at) {
  registry_->ObserveHistogram("tj_checkpoint_save_duration_seconds", "Checkpoint save time",
                              absl::ToDoubleSeconds(took), DurationBuckets());
  registry_->SetGauge("tj_checkpoint_last_bytes", "Size of the newest checkpoint",
                      static_cast<double>(bytes));
  SetNewest(at);
}

void CheckpointMetrics::Restored(absl::Duration took, bool found, absl::Time written_at,
                                 absl::Time at) {
  registry_->SetGauge("tj_checkpoint_restored",
                      "1 if this coordinator resumed from a checkpoint at start, 0 if none was found",
                      found ? 1 : 0);
  if (!found) return;
  registry_->ObserveHistogram("tj_checkpoint_restore_duration_seconds",
                              "Checkpoint restore time at start", absl::ToDoubleSeconds(took),
                              DurationBuckets());
  registry_->SetGauge("tj_checkpoint_restore_timestamp_seconds",
                      "When this coordinator restored its checkpoint (Unix time)",
                      absl::ToDoubleSeconds(at - absl::UnixEpoch()));
  if (written_at != absl::InfinitePast()) SetNewest(written_at);
}

}  // namespace tj
