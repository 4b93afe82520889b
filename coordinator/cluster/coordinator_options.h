// CoordinatorOptions: every tunable of the ClusterCoordinator, with TensorFlow's defaults where
// TensorFlow has one.
#pragma once

#include <cstddef>

#include "absl/time/time.h"
#include "coordinator/closure/closure_queue.h"

namespace tj {

struct CoordinatorOptions {
  // Schedule blocks while this many closures wait.
  size_t queue_capacity = kDefaultClosureQueueCapacity;
  // How long a failed worker is waited for before it is given up (TensorFlow: 3600 s).
  absl::Duration worker_recovery_timeout = absl::Seconds(3600);
  // Unreachable-PS errors per PS task that are retried before they count as a PS failure
  // (TensorFlow's TF_COORDINATOR_IGNORE_TRANSIENT_PS_FAILURES, default 3). 0 disables the retries.
  int transient_ps_failure_threshold = 3;
  // Upper bound of closures dispatched to one worker and not yet answered. The actual window adapts:
  // short closures fill it, long closures keep it near 1 so no worker hoards work.
  int max_inflight_per_worker = 256;
  // When nothing is queued and a worker has nothing in flight, Schedule writes the closure to that
  // worker itself instead of waking the worker's dispatch thread (lower latency for a lone closure;
  // see docs/benchmarks.md section 1). Off: every closure goes through the dispatch threads.
  bool direct_dispatch = true;
  // Worker i starts taking closures after min(i * stagger_delay, stagger_cap)
  // (TF_COORDINATOR_SCHEDULE_START_DELAY / _MAX).
  absl::Duration stagger_delay = absl::ZeroDuration();
  absl::Duration stagger_cap = absl::ZeroDuration();
  // Deadline of health checks and resource creation; backoff between reconnection attempts.
  absl::Duration health_check_timeout = absl::Seconds(2);
  absl::Duration resource_creation_timeout = absl::Seconds(60);
  absl::Duration reconnect_backoff_initial = absl::Milliseconds(20);
  absl::Duration reconnect_backoff_max = absl::Seconds(2);
  // A removed worker's in-flight closures may finish for this long before they are put back.
  absl::Duration drain_timeout = absl::Seconds(30);
};

}  // namespace tj
