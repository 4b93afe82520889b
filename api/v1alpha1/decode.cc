#include "api/v1alpha1/decode.h"

#include "api/v1alpha1/checkpoint_s3_json.h"
#include "api/v1alpha1/checkpoint_volume_json.h"
#include "api/v1alpha1/failure_policy_json.h"
#include "api/v1alpha1/json_fields.h"
#include "api/v1alpha1/status_json.h"

namespace tj::v1alpha1 {
namespace {

// ObjectMeta fields the API server sets or users may write, other than the typed ones: accepted
// and carried through unchanged, so an object read from the cluster round-trips.
constexpr std::string_view kOtherObjectMetaFields[] = {
    "generateName",
    "selfLink",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "ownerReferences",
    "finalizers",
    "managedFields",
    "clusterName",
};

ObjectMeta DecodeMetadata(const nlohmann::json& value, FieldErrors& errors) {
  ObjectMeta meta;
  ObjectReader r(value, "metadata", errors);
  meta.name = r.String("name").value_or("");
  meta.namespace_name = r.String("namespace").value_or("");
  if (auto labels = r.StringMap("labels")) meta.labels = *std::move(labels);
  if (auto annotations = r.StringMap("annotations")) meta.annotations = *std::move(annotations);
  meta.uid = r.String("uid");
  for (std::string_view key : kOtherObjectMetaFields) {
    if (const nlohmann::json* v = r.Field(key)) meta.other[std::string(key)] = *v;
  }
  r.RejectUnknown();
  return meta;
}

ReplicaSpec DecodeReplicaSpec(const nlohmann::json& value, const std::string& path,
                              FieldErrors& errors) {
  ReplicaSpec spec;
  ObjectReader r(value, path, errors);
  spec.replicas = r.Int32("replicas");
  if (std::optional<std::string> policy = r.String("restartPolicy")) {
    spec.restart_policy = ParseRestartPolicy(*policy);
    if (!spec.restart_policy) {
      errors.push_back(NotSupportedError(r.Path("restartPolicy"), *policy, RestartPolicyNames()));
    }
  }
  spec.restart_limit = r.Int32("restartLimit");
  if (std::optional<std::string> policy = r.String("replacementPolicy")) {
    spec.replacement_policy = ParseReplacementPolicy(*policy);
    if (!spec.replacement_policy) {
      errors.push_back(
          NotSupportedError(r.Path("replacementPolicy"), *policy, ReplacementPolicyNames()));
    }
  }
  // Kept verbatim: everything of a PodTemplateSpec the operator does not read goes to the pods.
  if (const nlohmann::json* tmpl = r.Field("template")) {
    if (ExpectObject(*tmpl, r.Path("template"), errors)) spec.pod_template = PodTemplate(*tmpl);
  }
  r.RejectUnknown();
  return spec;
}

std::map<ReplicaType, ReplicaSpec> DecodeReplicaSpecs(const nlohmann::json& value,
                                                      const std::string& path,
                                                      FieldErrors& errors) {
  std::map<ReplicaType, ReplicaSpec> specs;
  if (!ExpectObject(value, path, errors)) return specs;
  for (const auto& [key, entry] : value.items()) {
    const std::string entry_path = ChildPath(path, key);
    std::optional<ReplicaType> type = ParseReplicaType(key);
    if (!type) {
      errors.push_back(NotSupportedError(entry_path, key, ReplicaTypeNames()));
      continue;
    }
    // "Worker:" with nothing under it is written, so it is present (and missing its template).
    specs[*type] = entry.is_null() ? ReplicaSpec{} : DecodeReplicaSpec(entry, entry_path, errors);
  }
  return specs;
}

SchedulingPolicy DecodeSchedulingPolicy(const nlohmann::json& value, const std::string& path,
                                        FieldErrors& errors) {
  SchedulingPolicy policy;
  ObjectReader r(value, path, errors);
  policy.min_available = r.Int32("minAvailable");
  policy.queue = r.String("queue");
  policy.priority_class = r.String("priorityClass");
  r.RejectUnknown();
  return policy;
}

RunPolicy DecodeRunPolicy(const nlohmann::json& value, const std::string& path,
                          FieldErrors& errors) {
  RunPolicy policy;
  ObjectReader r(value, path, errors);
  policy.backoff_limit = r.Int32("backoffLimit");
  policy.active_deadline_seconds = r.Int64("activeDeadlineSeconds");
  policy.ttl_seconds_after_finished = r.Int32("ttlSecondsAfterFinished");
  if (std::optional<std::string> clean = r.String("cleanPodPolicy")) {
    policy.clean_pod_policy = ParseCleanPodPolicy(*clean);
    if (!policy.clean_pod_policy) {
      errors.push_back(NotSupportedError(r.Path("cleanPodPolicy"), *clean, CleanPodPolicyNames()));
    }
  }
  policy.suspend = r.Bool("suspend");
  policy.pending_timeout_seconds = r.Int64("pendingTimeoutSeconds");
  if (const nlohmann::json* scheduling = r.Field("schedulingPolicy")) {
    policy.scheduling_policy =
        DecodeSchedulingPolicy(*scheduling, r.Path("schedulingPolicy"), errors);
  }
  r.RejectUnknown();
  return policy;
}

FaultTolerance DecodeFaultTolerance(const nlohmann::json& value, const std::string& path,
                                    FieldErrors& errors) {
  FaultTolerance ft;
  ObjectReader r(value, path, errors);
  if (const nlohmann::json* codes = r.Field("restartExitCodes")) {
    const std::string codes_path = r.Path("restartExitCodes");
    if (ExpectArray(*codes, codes_path, errors)) {
      ft.restart_exit_codes.emplace();
      for (size_t i = 0; i < codes->size(); ++i) {
        if (auto code = ReadInt32((*codes)[i], IndexPath(codes_path, i), errors)) {
          ft.restart_exit_codes->push_back(*code);
        }
      }
    }
  }
  ft.worker_recovery_timeout_seconds = r.Int64("workerRecoveryTimeoutSeconds");
  ft.transient_ps_failure_threshold = r.Int32("transientPsFailureThreshold");
  r.RejectUnknown();
  return ft;
}

Preemption DecodePreemption(const nlohmann::json& value, const std::string& path,
                            FieldErrors& errors) {
  Preemption preemption;
  ObjectReader r(value, path, errors);
  preemption.grace_period_seconds = r.Int64("gracePeriodSeconds");
  r.RejectUnknown();
  return preemption;
}

CheckpointSpec DecodeCheckpoint(const nlohmann::json& value, const std::string& path,
                                FieldErrors& errors) {
  CheckpointSpec checkpoint;
  ObjectReader r(value, path, errors);
  checkpoint.dir = r.String("dir").value_or("");
  checkpoint.interval_steps = r.Int64("intervalSteps");
  checkpoint.keep = r.Int32("keep");
  checkpoint.full_every = r.Int32("fullEvery");
  if (const nlohmann::json* v = r.Field("volume")) {
    checkpoint.volume = DecodeCheckpointVolume(*v, r.Path("volume"), errors);
  }
  if (const nlohmann::json* v = r.Field("s3")) {
    checkpoint.s3 = DecodeCheckpointS3(*v, r.Path("s3"), errors);
  }
  r.RejectUnknown();
  return checkpoint;
}

TrainingJobSpec DecodeSpec(const nlohmann::json& value, FieldErrors& errors) {
  TrainingJobSpec spec;
  ObjectReader r(value, "spec", errors);
  if (const nlohmann::json* v = r.Field("replicaSpecs")) {
    spec.replica_specs = DecodeReplicaSpecs(*v, r.Path("replicaSpecs"), errors);
  }
  if (const nlohmann::json* v = r.Field("runPolicy")) {
    spec.run_policy = DecodeRunPolicy(*v, r.Path("runPolicy"), errors);
  }
  if (const nlohmann::json* v = r.Field("faultTolerance")) {
    spec.fault_tolerance = DecodeFaultTolerance(*v, r.Path("faultTolerance"), errors);
  }
  if (const nlohmann::json* v = r.Field("failurePolicy")) {
    spec.failure_policy = DecodeFailurePolicy(*v, r.Path("failurePolicy"), errors);
  }
  if (const nlohmann::json* v = r.Field("preemption")) {
    spec.preemption = DecodePreemption(*v, r.Path("preemption"), errors);
  }
  if (const nlohmann::json* v = r.Field("checkpoint")) {
    spec.checkpoint = DecodeCheckpoint(*v, r.Path("checkpoint"), errors);
  }
  spec.managed_by = r.String("managedBy");
  r.RejectUnknown();
  return spec;
}

}  // namespace

DecodedTrainingJob DecodeTrainingJob(const nlohmann::json& manifest) {
  DecodedTrainingJob out;
  FieldErrors& errors = out.errors;
  if (!manifest.is_object()) {
    errors.push_back({"",
                      "not a TrainingJob: the document must be a mapping (apiVersion, kind, "
                      "metadata, spec)"});
    return out;
  }
  ObjectReader r(manifest, "", errors);
  out.job.api_version = r.String("apiVersion").value_or("");
  out.job.kind = r.String("kind").value_or("");
  if (const nlohmann::json* v = r.Field("metadata")) out.job.metadata = DecodeMetadata(*v, errors);
  if (const nlohmann::json* v = r.Field("spec")) out.job.spec = DecodeSpec(*v, errors);
  if (const nlohmann::json* v = r.Field("status")) {
    out.job.status = DecodeTrainingJobStatus(*v, "status", errors);
  }
  r.RejectUnknown();
  return out;
}

}  // namespace tj::v1alpha1
