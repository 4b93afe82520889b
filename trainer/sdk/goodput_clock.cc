#include "trainer/sdk/goodput_clock.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "jobcontrol/goodput.h"

namespace tj::sdk {
namespace {

struct WorkerTotals {
  absl::Duration away;
  absl::Duration rerun;
  int workers = 0;  // in the pool: not drained away, removed or stopped
};

WorkerTotals Sum(const std::vector<WorkerStats>& workers) {
  WorkerTotals totals;
  for (const WorkerStats& w : workers) {
    totals.away += w.away;
    totals.rerun += w.rerun;
    if (w.state != WorkerState::kRemoved && w.state != WorkerState::kStopped &&
        w.state != WorkerState::kDraining) {
      ++totals.workers;
    }
  }
  return totals;
}

}  // namespace

GoodputClock::GoodputClock(absl::Time started, WorkersFn workers, std::string run)
    : started_(started), workers_(std::move(workers)), run_(std::move(run)) {}

std::string GoodputClock::NewRunId() {
  std::random_device rd;
  return absl::StrFormat("%08x%08x", rd(), rd());
}

void GoodputClock::Restored() {
  absl::MutexLock lock(&mu_);
  restored_ = true;
}

void GoodputClock::TrainingStarted() {
  const WorkerTotals totals = Sum(workers_());
  absl::MutexLock lock(&mu_);
  training_started_ = absl::Now();
  away_before_ = totals.away;
  rerun_before_ = totals.rerun;
  productive_at_checkpoint_ = 0;
}

void GoodputClock::CheckpointSaved(absl::Duration took) {
  absl::MutexLock lock(&mu_);
  checkpoint_save_ += std::max(took, absl::ZeroDuration());
  productive_at_checkpoint_ = ReadLocked(absl::Now()).seconds.productive;
}

v1alpha1::RunGoodput GoodputClock::Read() const {
  absl::ReaderMutexLock lock(&mu_);
  return ReadLocked(absl::Now());
}

v1alpha1::RunGoodput GoodputClock::ReadLocked(absl::Time now) const {
  RunClockReading reading;
  reading.wall = absl::ToDoubleSeconds(now - started_);
  reading.restored = restored_;
  reading.checkpoint_save = absl::ToDoubleSeconds(checkpoint_save_);
  if (training_started_) {
    reading.training_started = absl::ToDoubleSeconds(*training_started_ - started_);
    const WorkerTotals totals = Sum(workers_());
    reading.worker_seconds_away = absl::ToDoubleSeconds(totals.away - away_before_);
    reading.worker_seconds_rerun = absl::ToDoubleSeconds(totals.rerun - rerun_before_);
    reading.workers = totals.workers;
  }
  v1alpha1::RunGoodput run;
  run.run = run_;
  run.started_unix_seconds = absl::ToDoubleSeconds(started_ - absl::UnixEpoch());
  run.seconds = SplitRunTime(reading);
  run.productive_at_checkpoint = std::min(productive_at_checkpoint_, run.seconds.productive);
  return run;
}

void GoodputClock::Export(MetricsRegistry& registry) const {
  const v1alpha1::RunGoodput run = Read();
  registry.SetGauge("tj_goodput_wall_seconds", "Wall time of this coordinator's run",
                    run.seconds.wall);
  registry.SetGauge("tj_goodput_productive_seconds",
                    "Of tj_goodput_wall_seconds, productive training", run.seconds.productive);
  for (v1alpha1::LostCause cause : v1alpha1::kLostCauses) {
    registry.SetGauge("tj_goodput_lost_seconds", "Of tj_goodput_wall_seconds, time lost by cause",
                      run.seconds.lost_by(cause),
                      {{"cause", std::string(v1alpha1::LostCauseLabel(cause))}});
  }
  // Absent until some time has passed: never NaN.
  if (std::optional<double> ratio = GoodputRatio(run.seconds)) {
    registry.SetGauge("tj_goodput_ratio",
                      "Productive share of this coordinator's wall time (0 to 1)", *ratio);
  }
}

}  // namespace tj::sdk
