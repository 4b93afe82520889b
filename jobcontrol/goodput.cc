#include "jobcontrol/goodput.h"

#include <algorithm>
#include <cmath>

namespace tj {
namespace {

using v1alpha1::LostCause;
using v1alpha1::TimeSplit;

double Clean(double seconds) { return std::isfinite(seconds) && seconds > 0 ? seconds : 0; }

// Takes up to `want` out of `left` (both >= 0).
double Take(double want, double& left) {
  const double taken = std::min(Clean(want), left);
  left -= taken;
  return taken;
}

void Add(TimeSplit& into, const TimeSplit& split) {
  into.wall += split.wall;
  into.productive += split.productive;
  for (size_t i = 0; i < into.lost.size(); ++i) into.lost[i] += split.lost[i];
}

}  // namespace

TimeSplit SplitRunTime(const RunClockReading& reading) {
  TimeSplit split;
  split.wall = Clean(reading.wall);
  double left = split.wall;
  // Until training starts, all of it is start-up (or restart).
  const double startup =
      Take(reading.training_started ? *reading.training_started : split.wall, left);
  split.lost_by(reading.restored ? LostCause::kRestart : LostCause::kStartup) = startup;
  split.lost_by(LostCause::kCheckpointSave) = Take(reading.checkpoint_save, left);
  const double workers = reading.workers > 0 ? reading.workers : 1;
  split.lost_by(LostCause::kWaitingForWorkers) =
      Take(Clean(reading.worker_seconds_away) / workers, left);
  split.lost_by(LostCause::kWorkerRerun) =
      Take(Clean(reading.worker_seconds_rerun) / workers, left);
  split.productive = left;
  return split;
}

v1alpha1::JobGoodput MergeRun(const v1alpha1::JobGoodput& job, const v1alpha1::RunGoodput& report) {
  const v1alpha1::RunGoodput& last = job.last_run;
  if (report.run.empty()) return job;
  if (last.run.empty()) return {job.previous_runs, report};
  if (report.run == last.run) {
    if (report.seconds.wall < last.seconds.wall) return job;  // a stale read
    return {job.previous_runs, report};
  }
  if (report.started_unix_seconds < last.started_unix_seconds) return job;  // an older run
  v1alpha1::JobGoodput next{job.previous_runs, report};
  TimeSplit closed = last.seconds;
  if (job.previous_runs.wall > 0) {
    closed.lost_by(LostCause::kRestart) += closed.lost_by(LostCause::kStartup);
    closed.lost_by(LostCause::kStartup) = 0;
  }
  // The next run resumed from the newest checkpoint: training after it was done for nothing.
  const double thrown_away =
      std::clamp(closed.productive - Clean(last.productive_at_checkpoint), 0.0, closed.productive);
  closed.productive -= thrown_away;
  closed.lost_by(LostCause::kStepsSinceCheckpoint) += thrown_away;
  // No coordinator ran between the two (or the last one's final seconds were never reported).
  const double gap =
      Clean(report.started_unix_seconds - (last.started_unix_seconds + last.seconds.wall));
  closed.wall += gap;
  closed.lost_by(LostCause::kRestart) += gap;
  Add(next.previous_runs, closed);
  return next;
}

TimeSplit JobTotal(const v1alpha1::JobGoodput& job) {
  TimeSplit total = job.previous_runs;
  TimeSplit last = job.last_run.seconds;
  if (job.previous_runs.wall > 0) {
    last.lost_by(LostCause::kRestart) += last.lost_by(LostCause::kStartup);
    last.lost_by(LostCause::kStartup) = 0;
  }
  Add(total, last);
  return total;
}

std::optional<double> GoodputRatio(const TimeSplit& split) {
  if (!std::isfinite(split.wall) || split.wall <= 0) return std::nullopt;
  return std::clamp(Clean(split.productive) / split.wall, 0.0, 1.0);
}

}  // namespace tj
