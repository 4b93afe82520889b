// The status file of a local run (<work-dir>/status.json or --status-file): the job's phase,
// reason and message, restart count, times, the coordinator's last progress report and every
// replica's state, written atomically (a temporary file renamed over it) whenever something
// changes, so a reader never sees half of it. docs/tjctl-run.md describes the format.
#pragma once

#include <optional>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "api/v1alpha1/training_progress.h"
#include "nlohmann/json.hpp"

namespace tj::local {

struct ReplicaRunStatus {
  std::string name;
  std::string type;  // "Coordinator", "PS", "Worker"
  int index = 0;
  std::string address;
  // Where the coordinator's Coordination service is when not at `address` (a TensorFlow chief,
  // launch_plan.h); empty otherwise. `tjctl preempt` sends notices there.
  std::string coordination_address;
  // "Pending" (not started yet), "Running", "BackOff" (waiting to be restarted), "Waiting" (its
  // restart held until a replica given notice is gone: jobcontrol/replacement.h), "Exited"
  // (ended, not restarted), "Stopped" (stopped by tjctl).
  std::string state = "Pending";
  int starts = 0;
  std::optional<int> last_exit_code;
  std::optional<int> last_signal;
  std::optional<pid_t> pid;  // while running
  std::string log;
};

struct RunStatus {
  std::string job;
  std::string phase;
  std::string reason;
  std::string message;
  int32_t restart_count = 0;
  absl::Time start_time;
  std::optional<absl::Time> completion_time;
  std::string work_dir;
  std::string checkpoint_dir;  // empty: the job keeps no checkpoints
  std::optional<v1alpha1::TrainingProgress> progress;
  std::vector<ReplicaRunStatus> replicas;  // coordinator, PS, workers
};

// "2024-05-01T12:00:00Z".
std::string FormatRfc3339(absl::Time time);
nlohmann::json ToJson(const RunStatus& status);

}  // namespace tj::local
