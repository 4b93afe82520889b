#include "api/v1alpha1/encode.h"

#include "api/v1alpha1/checkpoint_s3_json.h"
#include "api/v1alpha1/checkpoint_volume_json.h"
#include "api/v1alpha1/failure_policy_json.h"
#include "api/v1alpha1/status_json.h"

namespace tj::v1alpha1 {
namespace {

template <typename T>
void SetIf(nlohmann::json& out, const char* key, const std::optional<T>& value) {
  if (value) out[key] = *value;
}

nlohmann::json MetadataToJson(const ObjectMeta& meta) {
  nlohmann::json out = meta.other.is_object() ? meta.other : nlohmann::json::object();
  if (!meta.name.empty()) out["name"] = meta.name;
  if (!meta.namespace_name.empty()) out["namespace"] = meta.namespace_name;
  if (!meta.labels.empty()) out["labels"] = meta.labels;
  if (!meta.annotations.empty()) out["annotations"] = meta.annotations;
  SetIf(out, "uid", meta.uid);
  return out;
}

nlohmann::json ReplicaSpecToJson(const ReplicaSpec& spec) {
  nlohmann::json out = nlohmann::json::object();
  SetIf(out, "replicas", spec.replicas);
  if (spec.restart_policy) out["restartPolicy"] = RestartPolicyName(*spec.restart_policy);
  SetIf(out, "restartLimit", spec.restart_limit);
  if (spec.replacement_policy) {
    out["replacementPolicy"] = ReplacementPolicyName(*spec.replacement_policy);
  }
  if (!spec.pod_template.empty()) out["template"] = spec.pod_template.raw();
  return out;
}

nlohmann::json RunPolicyToJson(const RunPolicy& policy) {
  nlohmann::json out = nlohmann::json::object();
  SetIf(out, "backoffLimit", policy.backoff_limit);
  SetIf(out, "activeDeadlineSeconds", policy.active_deadline_seconds);
  SetIf(out, "ttlSecondsAfterFinished", policy.ttl_seconds_after_finished);
  SetIf(out, "pendingTimeoutSeconds", policy.pending_timeout_seconds);
  if (policy.clean_pod_policy) out["cleanPodPolicy"] = CleanPodPolicyName(*policy.clean_pod_policy);
  SetIf(out, "suspend", policy.suspend);
  if (policy.scheduling_policy) {
    nlohmann::json scheduling = nlohmann::json::object();
    SetIf(scheduling, "minAvailable", policy.scheduling_policy->min_available);
    SetIf(scheduling, "queue", policy.scheduling_policy->queue);
    SetIf(scheduling, "priorityClass", policy.scheduling_policy->priority_class);
    out["schedulingPolicy"] = std::move(scheduling);
  }
  return out;
}

nlohmann::json FaultToleranceToJson(const FaultTolerance& ft) {
  nlohmann::json out = nlohmann::json::object();
  SetIf(out, "restartExitCodes", ft.restart_exit_codes);
  SetIf(out, "workerRecoveryTimeoutSeconds", ft.worker_recovery_timeout_seconds);
  SetIf(out, "transientPsFailureThreshold", ft.transient_ps_failure_threshold);
  return out;
}

nlohmann::json SpecToJson(const TrainingJobSpec& spec) {
  nlohmann::json out = nlohmann::json::object();
  if (!spec.replica_specs.empty()) {
    nlohmann::json& replicas = out["replicaSpecs"] = nlohmann::json::object();
    for (const auto& [type, replica] : spec.replica_specs) {
      replicas[std::string(ReplicaTypeName(type))] = ReplicaSpecToJson(replica);
    }
  }
  // Sections the manifest did not have (and defaulting did not fill) stay out.
  if (nlohmann::json run = RunPolicyToJson(spec.run_policy); !run.empty()) {
    out["runPolicy"] = std::move(run);
  }
  if (nlohmann::json ft = FaultToleranceToJson(spec.fault_tolerance); !ft.empty()) {
    out["faultTolerance"] = std::move(ft);
  }
  if (spec.failure_policy) out["failurePolicy"] = FailurePolicyToJson(*spec.failure_policy);
  if (spec.preemption.grace_period_seconds) {
    out["preemption"] = {{"gracePeriodSeconds", *spec.preemption.grace_period_seconds}};
  }
  if (spec.checkpoint) {
    nlohmann::json checkpoint = {{"dir", spec.checkpoint->dir}};
    SetIf(checkpoint, "intervalSteps", spec.checkpoint->interval_steps);
    SetIf(checkpoint, "keep", spec.checkpoint->keep);
    SetIf(checkpoint, "fullEvery", spec.checkpoint->full_every);
    if (spec.checkpoint->volume) {
      checkpoint["volume"] = CheckpointVolumeToJson(*spec.checkpoint->volume);
    }
    if (spec.checkpoint->s3) checkpoint["s3"] = CheckpointS3ToJson(*spec.checkpoint->s3);
    out["checkpoint"] = std::move(checkpoint);
  }
  SetIf(out, "managedBy", spec.managed_by);
  return out;
}

}  // namespace

nlohmann::json TrainingJobToJson(const TrainingJob& job) {
  nlohmann::json out = nlohmann::json::object();
  out["apiVersion"] = job.api_version;
  out["kind"] = job.kind;
  out["metadata"] = MetadataToJson(job.metadata);
  out["spec"] = SpecToJson(job.spec);
  if (job.status) out["status"] = TrainingJobStatusToJson(*job.status);
  return out;
}

}  // namespace tj::v1alpha1
