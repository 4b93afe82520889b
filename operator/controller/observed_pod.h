// What the operator reads from a Pod (and its Node): which replica it is, where it is in its life,
// how it ended, and whether it is about to be taken away (the signals a preemption notice is sent
// for). Pure functions of the JSON objects.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "jobcontrol/job_phase.h"
#include "jobcontrol/restart_decision.h"
#include "nlohmann/json.hpp"
#include "operator/controller/stuck_pods.h"

namespace tj::op {

struct ObservedPod {
  ReplicaKey key;
  std::string name;
  std::string uid;
  std::string node_name;
  std::string pod_ip;
  ReplicaPhase phase = ReplicaPhase::kPending;  // kMissing is never returned
  Termination termination;                      // for kTerminated
  std::optional<absl::Time> finished_at;        // the trainer container's end, for kTerminated
  bool ready = false;
  // It mounts its role's certificate from the job's Secret: it serves mutual TLS. False for pods
  // of an operator before TLS, which serve plaintext until they are replaced.
  bool tls = false;
  // Set when the pod is being deleted (metadata.deletionTimestamp): the time the kubelet kills it,
  // i.e. the deletion timestamp (already "now + grace" as the API server writes it).
  std::optional<absl::Time> deletion_deadline;
  // "DisruptionTarget/<reason>" when the pod has the DisruptionTarget condition True (preemption
  // by the scheduler, taint manager, eviction API, pod GC, kubelet), or "Evicted" for a pod the
  // kubelet evicted; empty otherwise.
  std::string disruption;
  // metadata.creationTimestamp; unset when absent (the API server always writes it).
  std::optional<absl::Time> created_at;
  // For kPending: why it cannot start on its own (stuck_pods.h); unset while it is on its way.
  std::optional<PodStuck> stuck;
};

// The replica labels (api/v1alpha1/labels.h) must be present and valid; InvalidArgument naming
// the pod and label otherwise (such a pod is not ours to manage).
absl::StatusOr<ObservedPod> ObservePod(const nlohmann::json& pod);

// Whether a Node is healthy: its Ready condition is True. A node without conditions (just
// registered) counts as ready; Unknown (the node controller lost it) and False do not.
bool NodeIsReady(const nlohmann::json& node);

// Why the coordinator should hear about this pod now, or empty: it is disrupted, being deleted,
// or its node is gone or not ready (`node` null: no such Node). Terminated pods need no notice.
std::string PreemptionSignal(const ObservedPod& pod, const nlohmann::json* node,
                             bool node_known);

// RFC 3339 as the API server writes it; nullopt when absent or unparsable.
std::optional<absl::Time> ParseKubernetesTime(const nlohmann::json& value);

}  // namespace tj::op
