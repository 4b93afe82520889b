#include "operator/controller/observed_pod.h"

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "api/v1alpha1/enums.h"
#include "api/v1alpha1/labels.h"
#include "operator/kube/typed_objects.h"

namespace tj::op {
namespace {

using nlohmann::json;

const json* Child(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string StringAt(const json& object, const char* key) {
  const json* value = Child(object, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

// The condition of `type` in status.conditions, or null.
const json* FindCondition(const json& object, const char* type) {
  const json* status = Child(object, "status");
  const json* conditions = status ? Child(*status, "conditions") : nullptr;
  if (conditions == nullptr || !conditions->is_array()) return nullptr;
  for (const json& condition : *conditions) {
    if (StringAt(condition, "type") == type) return &condition;
  }
  return nullptr;
}

// Whether the pod mounts a TLS certificate from the job's Secret (replica_objects.cc): it serves
// mutual TLS. Read from the volumes, not from TJ_TLS_DIR: the operator's pod cache drops env.
bool MountsJobCertificate(const json& spec) {
  const json* volumes = Child(spec, "volumes");
  if (volumes == nullptr || !volumes->is_array()) return false;
  const std::string certificate = absl::StrCat(v1alpha1::kJobTlsSubdir, "/tls.crt");
  for (const json& volume : *volumes) {
    if (StringAt(volume, "name") != v1alpha1::kJobTokenVolumeName) continue;
    const json* secret = Child(volume, "secret");
    const json* items = secret ? Child(*secret, "items") : nullptr;
    if (items == nullptr || !items->is_array()) return false;
    for (const json& item : *items) {
      if (StringAt(item, "path") == certificate) return true;
    }
  }
  return false;
}

std::optional<ReplicaType> ReplicaTypeFromLabel(const std::string& value) {
  for (ReplicaType type : v1alpha1::kReplicaTypes) {
    if (v1alpha1::ReplicaTypeLowerName(type) == value) return type;
  }
  return std::nullopt;
}

// The trainer container's status (the first container of the spec), or the first status.
const json* TrainerStatus(const json& pod) {
  const json* spec = Child(pod, "spec");
  const json* containers = spec ? Child(*spec, "containers") : nullptr;
  std::string trainer;
  if (containers && containers->is_array() && !containers->empty()) {
    trainer = StringAt((*containers)[0], "name");
  }
  const json* status = Child(pod, "status");
  const json* statuses = status ? Child(*status, "containerStatuses") : nullptr;
  if (statuses == nullptr || !statuses->is_array() || statuses->empty()) return nullptr;
  for (const json& s : *statuses) {
    if (StringAt(s, "name") == trainer) return &s;
  }
  return &(*statuses)[0];
}

}  // namespace

std::optional<absl::Time> ParseKubernetesTime(const json& value) {
  return kube::ParseTime(value);
}

absl::StatusOr<ObservedPod> ObservePod(const json& pod) {
  ObservedPod out;
  const json* metadata = Child(pod, "metadata");
  if (metadata == nullptr) return absl::InvalidArgumentError("pod without metadata");
  out.name = StringAt(*metadata, "name");
  out.uid = StringAt(*metadata, "uid");
  const json* labels = Child(*metadata, "labels");
  const std::string type_label = labels ? StringAt(*labels, v1alpha1::kReplicaTypeLabel) : "";
  const std::string index_label = labels ? StringAt(*labels, v1alpha1::kReplicaIndexLabel) : "";
  std::optional<ReplicaType> type = ReplicaTypeFromLabel(type_label);
  if (!type) {
    return absl::InvalidArgumentError(absl::StrCat("pod \"", out.name, "\": label ",
                                                   v1alpha1::kReplicaTypeLabel, "=\"", type_label,
                                                   "\" is not coordinator, ps or worker"));
  }
  int index = -1;
  if (!absl::SimpleAtoi(index_label, &index) || index < 0) {
    return absl::InvalidArgumentError(absl::StrCat("pod \"", out.name, "\": label ",
                                                   v1alpha1::kReplicaIndexLabel, "=\"",
                                                   index_label, "\" is not an index"));
  }
  out.key = ReplicaKey{*type, index};

  if (const json* spec = Child(pod, "spec")) {
    out.node_name = StringAt(*spec, "nodeName");
    out.tls = MountsJobCertificate(*spec);
  }
  const json* status = Child(pod, "status");
  if (status) out.pod_ip = StringAt(*status, "podIP");

  if (const json* created = Child(*metadata, "creationTimestamp")) {
    out.created_at = ParseKubernetesTime(*created);
  }
  if (const json* deletion = Child(*metadata, "deletionTimestamp")) {
    out.deletion_deadline = ParseKubernetesTime(*deletion);
    if (!out.deletion_deadline) out.deletion_deadline = absl::InfinitePast();
  }
  const json* target = FindCondition(pod, "DisruptionTarget");
  const bool targeted = target && StringAt(*target, "status") == "True";
  const bool kubelet_evicted = status && StringAt(*status, "reason") == "Evicted";
  if (targeted) {
    out.disruption = absl::StrCat("DisruptionTarget/", StringAt(*target, "reason"));
  } else if (kubelet_evicted) {
    out.disruption = "Evicted";
  }
  // For the failure policy's Evicted condition: the kubelet's evictions and the Eviction API's.
  const bool evicted =
      kubelet_evicted || (targeted && StringAt(*target, "reason") == "EvictionByEvictionAPI");
  if (const json* ready = FindCondition(pod, "Ready")) {
    out.ready = StringAt(*ready, "status") == "True";
  }

  const std::string phase = status ? StringAt(*status, "phase") : "";
  if (phase == "Running" || phase == "Unknown") {
    out.phase = ReplicaPhase::kRunning;
  } else if (phase == "Succeeded" || phase == "Failed") {
    out.phase = ReplicaPhase::kTerminated;
    out.termination.disrupted = !out.disruption.empty();
    out.termination.evicted = evicted;
    const json* trainer = TrainerStatus(pod);
    const json* state = trainer ? Child(*trainer, "state") : nullptr;
    const json* terminated = state ? Child(*state, "terminated") : nullptr;
    if (terminated != nullptr) {
      const json* code = Child(*terminated, "exitCode");
      out.termination.exit_code = code && code->is_number_integer() ? code->get<int>() : 1;
      out.termination.oom_killed = StringAt(*terminated, "reason") == "OOMKilled";
      if (const json* finished = Child(*terminated, "finishedAt")) {
        out.finished_at = ParseKubernetesTime(*finished);
      }
    } else {
      // Failed before the container ran (admission error, node shutdown): not the program's
      // exit code, so an error unless the pod says it was disrupted.
      out.termination.exit_code = phase == "Succeeded" ? 0 : 1;
    }
  } else {
    out.phase = ReplicaPhase::kPending;
    out.stuck = PodStuckReason(pod);
  }
  return out;
}

bool NodeIsReady(const json& node) {
  return kube::Node(node).ready().value_or(true);
}

std::string PreemptionSignal(const ObservedPod& pod, const json* node, bool node_known) {
  if (pod.phase == ReplicaPhase::kTerminated) return "";
  if (!pod.disruption.empty()) return pod.disruption;
  if (pod.deletion_deadline) return "Deleted";
  if (pod.node_name.empty() || !node_known) return "";
  if (node == nullptr) return "NodeGone";
  if (!NodeIsReady(*node)) return "NodeNotReady";
  return "";
}

}  // namespace tj::op
