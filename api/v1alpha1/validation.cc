#include "api/v1alpha1/validation.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/checkpoint_s3_json.h"
#include "api/v1alpha1/checkpoint_volume_json.h"
#include "api/v1alpha1/coordination_port.h"
#include "api/v1alpha1/defaults.h"
#include "api/v1alpha1/dns_names.h"
#include "api/v1alpha1/failure_policy_json.h"
#include "api/v1alpha1/limits.h"
#include "api/v1alpha1/managed_by.h"

namespace tj::v1alpha1 {
namespace {

constexpr char kGreaterOrEqual0[] = "must be greater than or equal to 0";
constexpr char kGreaterOrEqual1[] = "must be greater than or equal to 1";

int32_t Replicas(const ReplicaSpec& spec) { return spec.replicas.value_or(kDefaultReplicas); }

// "-worker-99" for the last of 100 workers.
std::string LongestSuffix(const TrainingJobSpec& spec) {
  std::string longest;
  for (const auto& [type, replica] : spec.replica_specs) {
    // Counts beyond the limits have their own error; the name is judged as for a valid job.
    const int32_t last_index = std::clamp(Replicas(replica), 1, kMaxReplicasPerType) - 1;
    std::string suffix =
        absl::StrCat("-", std::string(ReplicaTypeLowerName(type)), "-", last_index);
    if (suffix.size() > longest.size()) longest = std::move(suffix);
  }
  // Without replica specs the coordinator's is the one every valid job has.
  if (longest.empty()) longest = "-coordinator-0";
  return longest;
}

template <typename Int>
void CheckAtLeast(FieldErrors& errors, const std::string& path, const std::optional<Int>& value,
                  Int minimum) {
  if (value && *value < minimum) {
    errors.push_back(
        InvalidError(path, *value, minimum == 0 ? kGreaterOrEqual0 : kGreaterOrEqual1));
  }
}

void ValidateTypeMeta(const TrainingJob& job, FieldErrors& errors) {
  if (job.api_version.empty()) {
    errors.push_back(RequiredError("apiVersion", std::string(kApiVersion)));
  } else if (job.api_version != kApiVersion) {
    errors.push_back(NotSupportedError("apiVersion", job.api_version, {kApiVersion}));
  }
  if (job.kind.empty()) {
    errors.push_back(RequiredError("kind", std::string(kKind)));
  } else if (job.kind != kKind) {
    errors.push_back(NotSupportedError("kind", job.kind, {kKind}));
  }
}

void ValidateMetadata(const TrainingJob& job, FieldErrors& errors) {
  const std::string& name = job.metadata.name;
  if (name.empty()) {
    errors.push_back(RequiredError("metadata.name"));
  } else if (!IsDns1035Label(name)) {
    errors.push_back(InvalidError(
        "metadata.name", name,
        "must be a lowercase RFC 1035 label (a-z, 0-9 and '-', starting with a letter and ending "
        "with a letter or digit): it names the job's pods and Services"));
  } else if (const size_t max = MaxJobNameLength(job.spec); name.size() > max) {
    const std::string example = absl::StrCat(name, LongestSuffix(job.spec));
    errors.push_back(
        InvalidError("metadata.name", name,
                     absl::StrCat("must be no more than ", max, " characters: the replica name \"",
                                  example, "\" would be ", example.size(), " characters, over the ",
                                  kMaxReplicaNameLength, " allowed for pod and Service names")));
  }
  const std::string& ns = job.metadata.namespace_name;
  if (!ns.empty() && !IsDns1123Label(ns)) {
    errors.push_back(InvalidError("metadata.namespace", ns, "must be a lowercase RFC 1123 label"));
  }
}

void ValidateReplicaSpecs(const TrainingJobSpec& spec, const ValidationOptions& options,
                          FieldErrors& errors) {
  const std::string path = "spec.replicaSpecs";
  if (spec.replica_specs.empty()) {
    errors.push_back(RequiredError(path, "Coordinator, PS and Worker replica specs"));
    return;
  }
  for (ReplicaType type : kReplicaTypes) {
    const std::string type_path = ChildPath(path, ReplicaTypeName(type));
    auto it = spec.replica_specs.find(type);
    if (it == spec.replica_specs.end()) {
      errors.push_back(RequiredError(type_path));
      continue;
    }
    const ReplicaSpec& replica = it->second;
    const std::string replicas_path = ChildPath(type_path, "replicas");
    if (type == ReplicaType::kCoordinator) {
      if (Replicas(replica) != 1) {
        errors.push_back(InvalidError(replicas_path, Replicas(replica),
                                      "must be 1: a TrainingJob has exactly one coordinator"));
      }
    } else if (replica.replicas && *replica.replicas > kMaxReplicasPerType) {
      errors.push_back(
          InvalidError(replicas_path, *replica.replicas,
                       absl::StrCat("must be less than or equal to ", kMaxReplicasPerType,
                                    ": every replica's TF_CONFIG lists every replica of the job")));
    } else {
      CheckAtLeast(errors, replicas_path, replica.replicas, 1);
    }
    CheckAtLeast(errors, ChildPath(type_path, "restartLimit"), replica.restart_limit, 0);
    ValidatePodTemplate(replica.pod_template, ChildPath(type_path, "template"), options.target,
                        errors);
  }
}

int64_t TotalReplicas(const TrainingJobSpec& spec) {
  int64_t total = 0;
  for (const auto& [type, replica] : spec.replica_specs) total += Replicas(replica);
  return total;
}

// Only when every type is within its own bounds: otherwise that type's error says it already.
void CheckTotalReplicas(const TrainingJobSpec& spec, FieldErrors& errors) {
  for (const auto& [type, replica] : spec.replica_specs) {
    if (Replicas(replica) < 1 || Replicas(replica) > kMaxReplicasPerType) return;
  }
  if (const int64_t total = TotalReplicas(spec); total > kMaxTotalReplicas) {
    errors.push_back(InvalidError(
        "spec.replicaSpecs", total,
        absl::StrCat("the job's replicas (Coordinator + PS + Worker) must be at most ",
                     kMaxTotalReplicas,
                     " in total: every replica's TF_CONFIG lists every replica of the job")));
  }
}

void ValidateRunPolicy(const TrainingJobSpec& spec, FieldErrors& errors) {
  const RunPolicy& run = spec.run_policy;
  CheckAtLeast(errors, "spec.runPolicy.backoffLimit", run.backoff_limit, 0);
  // 0 would fail every job at its start; it is a mistake, not a setting.
  CheckAtLeast(errors, "spec.runPolicy.activeDeadlineSeconds", run.active_deadline_seconds,
               int64_t{1});
  CheckAtLeast(errors, "spec.runPolicy.ttlSecondsAfterFinished", run.ttl_seconds_after_finished, 0);
  CheckAtLeast(errors, "spec.runPolicy.pendingTimeoutSeconds", run.pending_timeout_seconds,
               int64_t{1});
  if (run.scheduling_policy && run.scheduling_policy->min_available) {
    const std::string path = "spec.runPolicy.schedulingPolicy.minAvailable";
    const int32_t min_available = *run.scheduling_policy->min_available;
    if (min_available < 1) {
      errors.push_back(InvalidError(path, min_available, kGreaterOrEqual1));
    } else if (min_available > TotalReplicas(spec)) {
      errors.push_back(InvalidError(
          path, min_available,
          absl::StrCat("must not exceed the job's ", TotalReplicas(spec), " replicas")));
    }
  }
}

void ValidateFaultTolerance(const FaultTolerance& ft, FieldErrors& errors) {
  const std::string path = "spec.faultTolerance";
  if (ft.restart_exit_codes) {
    std::set<int32_t> seen;
    const std::string codes_path = ChildPath(path, "restartExitCodes");
    for (size_t i = 0; i < ft.restart_exit_codes->size(); ++i) {
      const int32_t code = (*ft.restart_exit_codes)[i];
      const std::string code_path = IndexPath(codes_path, i);
      if (code == 0) {
        errors.push_back(InvalidError(
            code_path, code, "exit code 0 means success; it can never mean \"restart me\""));
      } else if (code < 1 || code > 255) {
        errors.push_back(InvalidError(code_path, code, "must be an exit code from 1 to 255"));
      } else if (!seen.insert(code).second) {
        errors.push_back(DuplicateError(code_path, code));
      }
    }
  }
  CheckAtLeast(errors, ChildPath(path, "workerRecoveryTimeoutSeconds"),
               ft.worker_recovery_timeout_seconds, int64_t{0});
  CheckAtLeast(errors, ChildPath(path, "transientPsFailureThreshold"),
               ft.transient_ps_failure_threshold, 1);
}

void ValidateCheckpoint(const TrainingJobSpec& spec, FieldErrors& errors) {
  if (!spec.checkpoint) return;
  const CheckpointSpec& checkpoint = *spec.checkpoint;
  if (checkpoint.dir.empty()) {
    errors.push_back(RequiredError("spec.checkpoint.dir", "where checkpoints are written"));
  }
  CheckAtLeast(errors, "spec.checkpoint.intervalSteps", checkpoint.interval_steps, int64_t{1});
  CheckAtLeast(errors, "spec.checkpoint.keep", checkpoint.keep, 1);
  if (checkpoint.full_every && *checkpoint.full_every > kMaxCheckpointFullEvery) {
    errors.push_back(InvalidError(
        "spec.checkpoint.fullEvery", *checkpoint.full_every,
        absl::StrCat("must be less than or equal to ", kMaxCheckpointFullEvery,
                     ": a restore reads the full checkpoint and every delta after it")));
  } else {
    CheckAtLeast(errors, "spec.checkpoint.fullEvery", checkpoint.full_every, 1);
  }
  if (checkpoint.volume) ValidateCheckpointVolume(*checkpoint.volume, checkpoint.dir, errors);
  ValidateCheckpointStorage(checkpoint, errors);
}

// As the API server judges batch/v1 Job's spec.managedBy (the CRD: maxLength and pattern).
void ValidateManagedBy(const std::optional<std::string>& managed_by, FieldErrors& errors) {
  if (!managed_by) return;
  const std::string path = "spec.managedBy";
  if (managed_by->size() > kMaxManagedByLength) {
    errors.push_back(TooLongError(path, managed_by->size(), kMaxManagedByLength));
  } else if (!IsDomainPrefixedPath(*managed_by)) {
    errors.push_back(InvalidError(
        path, *managed_by,
        absl::StrCat("must be a domain-prefixed path naming the controller that runs the job, "
                     "such as \"",
                     kManagedByOperator, "\" (this operator, the same as unset) or \"",
                     kManagedByMultiKueue, "\"")));
  }
}

}  // namespace

size_t MaxJobNameLength(const TrainingJobSpec& spec) {
  const size_t suffix = LongestSuffix(spec).size();
  return suffix >= kMaxReplicaNameLength ? 0 : kMaxReplicaNameLength - suffix;
}

FieldErrors ValidateTrainingJob(const TrainingJob& job, const ValidationOptions& options) {
  FieldErrors errors;
  ValidateTypeMeta(job, errors);
  ValidateMetadata(job, errors);
  ValidateReplicaSpecs(job.spec, options, errors);
  ValidateCoordinationPort(job, errors);
  CheckTotalReplicas(job.spec, errors);
  ValidateRunPolicy(job.spec, errors);
  ValidateManagedBy(job.spec.managed_by, errors);
  ValidateFaultTolerance(job.spec.fault_tolerance, errors);
  if (job.spec.failure_policy) ValidateFailurePolicy(*job.spec.failure_policy, errors);
  CheckAtLeast(errors, "spec.preemption.gracePeriodSeconds",
               job.spec.preemption.grace_period_seconds, int64_t{0});
  ValidateCheckpoint(job.spec, errors);
  return errors;
}

}  // namespace tj::v1alpha1
