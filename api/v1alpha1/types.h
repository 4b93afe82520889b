// The TrainingJob resource, `apiVersion: trainingjob.dev/v1alpha1`, `kind: TrainingJob`, as C++
// types. Optional fields stay unset until WithDefaults() fills them, so a manifest round-trips
// without gaining fields it did not have. docs/trainingjob-schema.md is the prose version.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/v1alpha1/checkpoint_s3.h"
#include "api/v1alpha1/checkpoint_volume.h"
#include "api/v1alpha1/enums.h"
#include "api/v1alpha1/failure_policy.h"
#include "api/v1alpha1/pod_template.h"
#include "api/v1alpha1/status.h"
#include "nlohmann/json.hpp"

namespace tj::v1alpha1 {

inline constexpr std::string_view kApiVersion = "trainingjob.dev/v1alpha1";
inline constexpr std::string_view kKind = "TrainingJob";

struct ObjectMeta {
  std::string name;
  std::string namespace_name;  // "namespace" in the manifest
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::optional<std::string> uid;
  // The other ObjectMeta fields the API server sets (resourceVersion, generation,
  // ownerReferences, managedFields...), kept as written. An object; empty when there are none.
  nlohmann::json other = nlohmann::json::object();

  friend bool operator==(const ObjectMeta&, const ObjectMeta&) = default;
};

struct ReplicaSpec {
  std::optional<int32_t> replicas;
  std::optional<RestartPolicy> restart_policy;
  // Counted restarts of this type the job tolerates (beside runPolicy.backoffLimit, which counts
  // every type's); absent: no limit of its own.
  std::optional<int32_t> restart_limit;
  // When a replacement of this type may start; unset: Failed for the coordinator and PS,
  // TerminatingOrFailed for workers (jobcontrol/replacement.h, ReplacementPolicyFor).
  std::optional<ReplacementPolicy> replacement_policy;
  PodTemplate pod_template;  // "template" in the manifest

  friend bool operator==(const ReplicaSpec&, const ReplicaSpec&) = default;
};

// Gang scheduling (Volcano or the coscheduler); only used when the operator is asked to.
struct SchedulingPolicy {
  std::optional<int32_t> min_available;
  std::optional<std::string> queue;
  std::optional<std::string> priority_class;

  friend bool operator==(const SchedulingPolicy&, const SchedulingPolicy&) = default;
};

struct RunPolicy {
  std::optional<int32_t> backoff_limit;
  std::optional<int64_t> active_deadline_seconds;
  std::optional<int32_t> ttl_seconds_after_finished;
  std::optional<CleanPodPolicy> clean_pod_policy;
  std::optional<bool> suspend;
  std::optional<SchedulingPolicy> scheduling_policy;
  // A pod that cannot start on its own (Stuck) this long after it was created fails the job
  // (PendingTimeout); unset: the job waits, reporting Stuck.
  std::optional<int64_t> pending_timeout_seconds;

  friend bool operator==(const RunPolicy&, const RunPolicy&) = default;
};

struct FaultTolerance {
  std::optional<std::vector<int32_t>> restart_exit_codes;
  std::optional<int64_t> worker_recovery_timeout_seconds;
  std::optional<int32_t> transient_ps_failure_threshold;

  friend bool operator==(const FaultTolerance&, const FaultTolerance&) = default;
};

struct Preemption {
  std::optional<int64_t> grace_period_seconds;

  friend bool operator==(const Preemption&, const Preemption&) = default;
};

struct CheckpointSpec {
  std::string dir;
  std::optional<int64_t> interval_steps;
  std::optional<int32_t> keep;
  std::optional<int32_t> full_every;  // fullEvery
  // The claim mounted at dir on the coordinator and every PS; absent: the pods bring their own.
  std::optional<CheckpointVolume> volume;
  // With an s3://bucket/prefix dir: the endpoint and credentials Secret (not with volume).
  std::optional<CheckpointS3> s3;

  friend bool operator==(const CheckpointSpec&, const CheckpointSpec&) = default;
};

struct TrainingJobSpec {
  // Keys present in the manifest; validation requires all three.
  std::map<ReplicaType, ReplicaSpec> replica_specs;
  RunPolicy run_policy;
  FaultTolerance fault_tolerance;
  std::optional<FailurePolicy> failure_policy;  // absent: restartPolicy alone decides
  Preemption preemption;
  std::optional<CheckpointSpec> checkpoint;  // absent: the job keeps no checkpoints
  std::optional<std::string> managed_by;     // absent: this operator (managed_by.h)

  friend bool operator==(const TrainingJobSpec&, const TrainingJobSpec&) = default;
};

struct TrainingJob {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  TrainingJobSpec spec;
  std::optional<TrainingJobStatus> status;

  friend bool operator==(const TrainingJob&, const TrainingJob&) = default;
};

}  // namespace tj::v1alpha1
