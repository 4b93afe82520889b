// The part of a worker's or PS's life between "serving" and "shutting down", the same for both:
// say whether RPCs need the job token, register with the coordinator and heartbeat to it (when
// the task knows its coordinator), and wait for SIGTERM or SIGINT.
#pragma once

#include <cstdint>
#include <string>

namespace tj {

// Blocks until SIGTERM or SIGINT (blocked by the caller with BlockShutdownSignals()); returns the
// signal. `task_type` is "worker" or "ps"; `coordinator_address` may be empty.
int ServeTaskUntilSignalled(const std::string& program, const std::string& task_type, int task,
                            uint64_t incarnation, const std::string& coordinator_address);

}  // namespace tj
