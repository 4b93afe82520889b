#include "jobcontrol/replica_env.h"

#include <string>

#include "api/v1alpha1/defaults.h"
#include "api/v1alpha1/enums.h"
#include "api/v1alpha1/runtime_env.h"

namespace tj {

namespace env = v1alpha1::env;

EnvList ReplicaEnvironment(const v1alpha1::TrainingJob& job, ReplicaKey replica,
                           const std::string& tf_config, const std::string& checkpoint_dir) {
  const v1alpha1::TrainingJobSpec& spec = job.spec;
  EnvList out;
  out.emplace_back(env::kTfConfig, tf_config);
  out.emplace_back(env::kJobName, job.metadata.name);
  out.emplace_back(env::kJobNamespace,
                   job.metadata.namespace_name.empty() ? "default" : job.metadata.namespace_name);
  out.emplace_back(env::kReplicaType, std::string(v1alpha1::ReplicaTypeName(replica.type)));
  out.emplace_back(env::kReplicaIndex, std::to_string(replica.index));
  out.emplace_back(env::kReplicaName, ReplicaName(job, replica));

  if (spec.checkpoint.has_value()) {
    out.emplace_back(env::kCheckpointDir,
                     checkpoint_dir.empty() ? spec.checkpoint->dir : checkpoint_dir);
    out.emplace_back(env::kCheckpointIntervalSteps,
                     std::to_string(spec.checkpoint->interval_steps.value_or(0)));
    out.emplace_back(env::kCheckpointKeep, std::to_string(spec.checkpoint->keep.value_or(
                                               v1alpha1::kDefaultCheckpointKeep)));
    out.emplace_back(env::kCheckpointFullEvery,
                     std::to_string(spec.checkpoint->full_every.value_or(
                         v1alpha1::kDefaultCheckpointFullEvery)));
  }

  const auto& codes = spec.fault_tolerance.restart_exit_codes;
  out.emplace_back(env::kRestartExitCode,
                   std::to_string(codes.has_value() && !codes->empty()
                                      ? codes->front()
                                      : v1alpha1::kDefaultRestartExitCode));
  out.emplace_back(env::kWorkerRecoveryTimeoutSeconds,
                   std::to_string(spec.fault_tolerance.worker_recovery_timeout_seconds.value_or(
                       v1alpha1::kDefaultWorkerRecoveryTimeoutSeconds)));
  out.emplace_back(env::kTransientPsFailureThreshold,
                   std::to_string(spec.fault_tolerance.transient_ps_failure_threshold.value_or(
                       v1alpha1::kDefaultTransientPsFailureThreshold)));
  out.emplace_back(env::kPreemptionGracePeriodSeconds,
                   std::to_string(spec.preemption.grace_period_seconds.value_or(
                       v1alpha1::kDefaultPreemptionGracePeriodSeconds)));
  return out;
}

EnvList MergeEnvironment(EnvList base, const EnvList& extra) {
  for (const auto& [name, value] : extra) {
    bool replaced = false;
    for (auto& [existing_name, existing_value] : base) {
      if (existing_name == name) {
        existing_value = value;
        replaced = true;
      }
    }
    if (!replaced) base.emplace_back(name, value);
  }
  return base;
}

}  // namespace tj
