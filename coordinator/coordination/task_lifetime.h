// The part of a worker's or PS's life between "serving" and "shutting down", the same for both:
// say whether RPCs need the job token, register with the coordinator (with the address peers dial)
// and heartbeat to it when the task knows its coordinator, and wait for SIGTERM or SIGINT.
//
// A parameter server asked to stop (SIGTERM: a pod evicted, preempted, deleted) holds state the
// coordinator must checkpoint first, so with `serve_until_coordinator_done` it tells the
// coordinator (a PreemptionNotice for itself, the same the operator sends) and keeps serving until
// the coordinator no longer answers (it checkpointed and exited with the restart code, or the job
// is over), a second signal arrives, or `max_linger` passes. The kubelet's SIGKILL at the end of
// the grace period bounds it anyway.
#pragma once

#include <cstdint>
#include <string>

#include "absl/time/time.h"

namespace tj {

struct TaskLifetime {
  std::string program;    // for logs
  std::string task_type;  // "worker" or "ps"
  int task = 0;
  uint64_t incarnation = 0;
  std::string address;              // where peers dial this task; told to the coordinator
  std::string coordinator_address;  // empty: no coordinator to register with
  bool serve_until_coordinator_done = false;
  absl::Duration max_linger = absl::Minutes(5);
  absl::Duration linger_poll = absl::Milliseconds(500);  // how often a second signal is seen
};

// Blocks until SIGTERM or SIGINT (blocked by the caller with BlockShutdownSignals()), then, for a
// task that serves until its coordinator is done, until that; returns the first signal.
int ServeTaskUntilSignalled(const TaskLifetime& lifetime);

}  // namespace tj
