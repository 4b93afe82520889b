// Goodput accounting, shared by the coordinator (its own run), the operator (status.goodput) and
// `tjctl run` (its final line). Pure: the callers read clocks and counters; this splits time.
//
// A coordinator splits its own wall time (SplitRunTime) and publishes the split in its progress.
// The job's account (MergeRun) adds the runs up: a report from a new coordinator closes the
// previous run, whose training since its newest checkpoint becomes lost (the new one restored that
// checkpoint), and the wall time between the two runs counts as restart.
#pragma once

#include <optional>

#include "api/v1alpha1/goodput.h"

namespace tj {

// What a coordinator measured of its own run so far, in seconds.
struct RunClockReading {
  double wall = 0;  // since the process started
  // Since the process started, when training started: the loop's first step of this run
  // completed (after any restore). Absent while it has not.
  std::optional<double> training_started = std::nullopt;
  double checkpoint_save = 0;  // the training loop paused for saves
  // Worker-seconds since training started: configured workers away (recovering, preempted, lost),
  // and spent on closures a lost worker never answered (they ran again elsewhere).
  double worker_seconds_away = 0;
  double worker_seconds_rerun = 0;
  int workers = 0;        // configured workers
  bool restored = false;  // resumed from a checkpoint: its start-up is a restart
};

// Splits the run's wall time. Worker-seconds count as wall time in proportion to the workers
// (one worker of four away for 8 s is 2 s lost). Every figure is finite and >= 0, and
// productive + lost = wall, whatever the reading (negative or NaN inputs count as 0).
v1alpha1::TimeSplit SplitRunTime(const RunClockReading& reading);

// The job's account after `report`. A report of the run seen last replaces it, unless it is
// older (less wall time: a stale read). A report of another run that started after it closes it.
// A report from a run that started before the last one is stale and ignored.
v1alpha1::JobGoodput MergeRun(const v1alpha1::JobGoodput& job, const v1alpha1::RunGoodput& report);

// All runs together. A run after the first one has no start-up: its start counts as restart.
v1alpha1::TimeSplit JobTotal(const v1alpha1::JobGoodput& job);

// productive / wall, in [0, 1]; absent while no time has passed.
std::optional<double> GoodputRatio(const v1alpha1::TimeSplit& split);

}  // namespace tj
