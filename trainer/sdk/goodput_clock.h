// GoodputClock: the coordinator's account of its own run (jobcontrol/goodput.h): when the process
// started, whether it restored a checkpoint, when training started (its first step completed),
// time paused for checkpoint saves, and the workers' time away and on work that ran again
// (ClusterCoordinator::Workers). It publishes the split in the progress (what the operator and
// `tjctl run` add up across coordinator restarts) and as tj_goodput_* gauges. Thread-safe: the
// training loop marks, scrapes and reports read.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "api/v1alpha1/goodput.h"
#include "coordinator/cluster/worker_connection.h"
#include "coordinator/metrics/metrics_registry.h"

namespace tj::sdk {

class GoodputClock {
 public:
  using WorkersFn = std::function<std::vector<WorkerStats>()>;
  // `started`: when the coordinator process started. `workers` is called on every Read.
  GoodputClock(absl::Time started, WorkersFn workers, std::string run = NewRunId());

  // This run resumed a checkpoint: its time until training starts is a restart, not start-up.
  void Restored() ABSL_LOCKS_EXCLUDED(mu_);
  // Training is under way: the loop's first step of this run completed. Productive time and the
  // workers' time away count from here; before it, all is start-up (or restart).
  void TrainingStarted() ABSL_LOCKS_EXCLUDED(mu_);
  // A checkpoint was saved in `took`: that time is lost, and what was trained so far is safe.
  void CheckpointSaved(absl::Duration took) ABSL_LOCKS_EXCLUDED(mu_);

  v1alpha1::RunGoodput Read() const ABSL_LOCKS_EXCLUDED(mu_);
  // tj_goodput_ratio, tj_goodput_wall_seconds, tj_goodput_productive_seconds and
  // tj_goodput_lost_seconds{cause} for this coordinator's run.
  void Export(MetricsRegistry& registry) const ABSL_LOCKS_EXCLUDED(mu_);

  static std::string NewRunId();

 private:
  // Calls workers_ (which takes the connections' locks) under mu_: nothing holds a connection's
  // lock while calling the clock.
  v1alpha1::RunGoodput ReadLocked(absl::Time now) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const absl::Time started_;
  const WorkersFn workers_;
  const std::string run_;
  mutable absl::Mutex mu_;
  std::optional<absl::Time> training_started_ ABSL_GUARDED_BY(mu_);
  bool restored_ ABSL_GUARDED_BY(mu_) = false;
  absl::Duration checkpoint_save_ ABSL_GUARDED_BY(mu_);
  // The workers' totals when training started: earlier time away is start-up, not a loss.
  absl::Duration away_before_ ABSL_GUARDED_BY(mu_);
  absl::Duration rerun_before_ ABSL_GUARDED_BY(mu_);
  double productive_at_checkpoint_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tj::sdk
