// TerminationConfig: how the coordinator reacts to a preemption, after TensorFlow's
// tf.distribute.experimental.TerminationConfig: {termination watcher fn, exit fn, grace period,
// save fn}.
#pragma once

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace tj {

struct TerminationConfig {
  // Polled every `watch_interval`; returning true is a notice for the coordinator itself (a
  // platform's "this VM will be reclaimed" signal). Unset: only SIGTERM and notice RPCs.
  std::function<bool()> termination_watcher;
  absl::Duration watch_interval = absl::Seconds(1);
  // Runs after the final preemption checkpoint, before the program exits with `exit_code`.
  std::function<void()> exit_fn;
  // The exit code that asks the job to restart the coordinator: the job's first restart exit code.
  int exit_code = 42;
  // Time between the notice and the termination. 0: checkpoint at the next step boundary and exit.
  // More: checkpoint at once, keep training, and checkpoint again right before the deadline.
  absl::Duration grace_period = absl::ZeroDuration();
  // Replaces the default save (every PS shard plus the manifest). A no-op writes no checkpoint.
  std::function<absl::Status(int64_t step)> save_fn;
};

}  // namespace tj
