// ProgressReporter: the coordinator's running account of training (TrainingProgress), logged and,
// when the job gave a progress file, written there atomically for `tjctl run` to display.
#pragma once

#include <functional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "api/v1alpha1/training_progress.h"
#include "coordinator/metrics/metrics_registry.h"

namespace tj::sdk {

class ProgressReporter {
 public:
  explicit ProgressReporter(std::string path) : path_(std::move(path)) {}

  // Applies `update` to the progress and writes it out. A failed write is logged once and
  // otherwise ignored: progress is for display, training must not stop for it.
  template <typename Update>
  void Report(Update&& update) {
    absl::MutexLock lock(&mu_);
    update(progress_);
    WriteLocked();
  }
  // Every report also updates these gauges (tj_training_*, tj_checkpoint_*, tj_eval_metric).
  void set_metrics(MetricsRegistry* metrics) {
    absl::MutexLock lock(&mu_);
    metrics_ = metrics;
  }

  // Also hands every write (same rate limit as the file) to `publish` as compact JSON: the
  // coordinator's Coordination service, where the operator reads it. Null: stop publishing.
  void set_publisher(std::function<void(const std::string& json)> publish) {
    absl::MutexLock lock(&mu_);
    publish_ = std::move(publish);
  }

  // Every write carries `goodput()` (this run's time split) when set. Called under the reporter's
  // lock: it must not report progress itself.
  void set_goodput_source(std::function<v1alpha1::RunGoodput()> goodput) {
    absl::MutexLock lock(&mu_);
    goodput_ = std::move(goodput);
  }

  v1alpha1::TrainingProgress progress() const {
    absl::MutexLock lock(&mu_);
    return progress_;
  }

 private:
  void WriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  mutable absl::Mutex mu_;
  v1alpha1::TrainingProgress progress_ ABSL_GUARDED_BY(mu_);
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  MetricsRegistry* metrics_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::function<void(const std::string&)> publish_ ABSL_GUARDED_BY(mu_);
  std::function<v1alpha1::RunGoodput()> goodput_ ABSL_GUARDED_BY(mu_);
  static constexpr absl::Duration kMinWriteInterval = absl::Milliseconds(200);
  std::string written_state_ ABSL_GUARDED_BY(mu_);
  size_t written_events_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time written_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace tj::sdk
