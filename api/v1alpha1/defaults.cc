#include "api/v1alpha1/defaults.h"

#include "api/v1alpha1/checkpoint_s3_json.h"
#include "api/v1alpha1/checkpoint_volume_json.h"

namespace tj::v1alpha1 {

TrainingJob WithDefaults(TrainingJob job) {
  for (auto& [type, replica] : job.spec.replica_specs) {
    if (!replica.replicas) replica.replicas = kDefaultReplicas;
    if (!replica.restart_policy) replica.restart_policy = kDefaultRestartPolicy;
  }

  RunPolicy& run = job.spec.run_policy;
  if (!run.backoff_limit) run.backoff_limit = kDefaultBackoffLimit;
  if (!run.clean_pod_policy) run.clean_pod_policy = kDefaultCleanPodPolicy;
  if (!run.suspend) run.suspend = false;

  FaultTolerance& ft = job.spec.fault_tolerance;
  // Only an absent list is defaulted: an explicit [] means "restart on signals only".
  if (!ft.restart_exit_codes) ft.restart_exit_codes = std::vector<int32_t>{kDefaultRestartExitCode};
  if (!ft.worker_recovery_timeout_seconds) {
    ft.worker_recovery_timeout_seconds = kDefaultWorkerRecoveryTimeoutSeconds;
  }
  if (!ft.transient_ps_failure_threshold) {
    ft.transient_ps_failure_threshold = kDefaultTransientPsFailureThreshold;
  }

  if (!job.spec.preemption.grace_period_seconds) {
    job.spec.preemption.grace_period_seconds = kDefaultPreemptionGracePeriodSeconds;
  }
  if (job.spec.checkpoint && !job.spec.checkpoint->keep) {
    job.spec.checkpoint->keep = kDefaultCheckpointKeep;
  }
  if (job.spec.checkpoint && !job.spec.checkpoint->full_every) {
    job.spec.checkpoint->full_every = kDefaultCheckpointFullEvery;
  }
  if (job.spec.checkpoint && job.spec.checkpoint->volume) {
    DefaultCheckpointVolume(*job.spec.checkpoint->volume);
  }
  if (job.spec.checkpoint && job.spec.checkpoint->s3) DefaultCheckpointS3(*job.spec.checkpoint->s3);
  return job;
}

}  // namespace tj::v1alpha1
