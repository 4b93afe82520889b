// What the operator or `tjctl run` told this process about its job, read from the environment
// (api/v1alpha1/runtime_env.h): checkpoint directory and cadence, the restart exit code, the
// coordinator's fault tolerances, where to report progress. Unset variables read as defaults, so a
// program started by hand (only TF_CONFIG) still runs.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tj::sdk {

struct JobSettings {
  std::string job_name;      // TJ_JOB_NAME; empty when started by hand
  std::string replica_name;  // TJ_REPLICA_NAME
  std::string checkpoint_dir;  // empty: no checkpoints
  int64_t checkpoint_interval_steps = 0;  // 0: only the final checkpoint
  int checkpoint_keep = 3;
  // TJ_CHECKPOINT_FULL_EVERY: every this many checkpoints is full, the others incremental.
  int checkpoint_full_every = 10;  // v1alpha1::kDefaultCheckpointFullEvery
  // No progress from a PS saving or restoring its shard for this long: the PS is taken for lost.
  absl::Duration checkpoint_stall_timeout = absl::Seconds(60);
  int restart_exit_code = 42;
  absl::Duration worker_recovery_timeout = absl::Seconds(3600);
  int transient_ps_failure_threshold = 3;
  absl::Duration preemption_grace_period = absl::ZeroDuration();
  std::string progress_file;  // empty: progress is only logged
  std::string metrics_address;  // TJ_METRICS_ADDRESS; empty: no /metrics endpoint
};

// InvalidArgument naming the variable and its value when one is not a valid number in range.
absl::StatusOr<JobSettings> JobSettingsFromEnvironment();

}  // namespace tj::sdk
