#include "trainer/sdk/job_settings.h"

#include <cstdlib>
#include <string_view>

#include "absl/strings/numbers.h"
#include "api/v1alpha1/runtime_env.h"
#include "coordinator/base/strings.h"

namespace tj::sdk {
namespace {

namespace env = v1alpha1::env;

std::string EnvOr(const char* name, std::string fallback) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::move(fallback) : std::string(value);
}

// Reads an integer variable in [min, max]; `into` keeps its default when the variable is unset.
absl::Status ReadInt(const char* name, int64_t min, int64_t max, int64_t& into) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return absl::OkStatus();
  int64_t parsed = 0;
  if (!absl::SimpleAtoi(value, &parsed) || parsed < min || parsed > max) {
    return absl::InvalidArgumentError(Cat("environment variable ", name, "='", value,
                                          "' is not an integer in [", min, ", ", max, "]"));
  }
  into = parsed;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<JobSettings> JobSettingsFromEnvironment() {
  JobSettings settings;
  settings.job_name = EnvOr(env::kJobName, "");
  settings.replica_name = EnvOr(env::kReplicaName, "");
  settings.checkpoint_dir = EnvOr(env::kCheckpointDir, "");
  settings.progress_file = EnvOr(env::kProgressFile, "");
  settings.metrics_address = EnvOr(env::kMetricsAddress, "");

  int64_t keep = settings.checkpoint_keep;
  int64_t full_every = settings.checkpoint_full_every;
  int64_t exit_code = settings.restart_exit_code;
  int64_t recovery_seconds = absl::ToInt64Seconds(settings.worker_recovery_timeout);
  int64_t threshold = settings.transient_ps_failure_threshold;
  int64_t grace_seconds = 0;
  int64_t stall_seconds = absl::ToInt64Seconds(settings.checkpoint_stall_timeout);
  constexpr int64_t kMax32 = 2'147'483'647;
  for (absl::Status status : {
           ReadInt(env::kCheckpointIntervalSteps, 0, int64_t{1} << 50,
                   settings.checkpoint_interval_steps),
           ReadInt(env::kCheckpointKeep, 1, 1000, keep),
           ReadInt(env::kCheckpointFullEvery, 1, 1000, full_every),
           ReadInt(env::kRestartExitCode, 1, 255, exit_code),
           ReadInt(env::kWorkerRecoveryTimeoutSeconds, 0, kMax32, recovery_seconds),
           ReadInt(env::kTransientPsFailureThreshold, 0, kMax32, threshold),
           ReadInt(env::kPreemptionGracePeriodSeconds, 0, kMax32, grace_seconds),
           ReadInt(env::kCheckpointStallTimeoutSeconds, 1, kMax32, stall_seconds),
       }) {
    if (!status.ok()) return status;
  }
  settings.checkpoint_keep = static_cast<int>(keep);
  settings.checkpoint_full_every = static_cast<int>(full_every);
  settings.restart_exit_code = static_cast<int>(exit_code);
  settings.worker_recovery_timeout = absl::Seconds(recovery_seconds);
  settings.transient_ps_failure_threshold = static_cast<int>(threshold);
  settings.preemption_grace_period = absl::Seconds(grace_seconds);
  settings.checkpoint_stall_timeout = absl::Seconds(stall_seconds);
  return settings;
}

}  // namespace tj::sdk
