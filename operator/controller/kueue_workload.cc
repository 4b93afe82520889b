#include "operator/controller/kueue_workload.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "api/v1alpha1/status_json.h"
#include "jobcontrol/replicas.h"
#include "operator/controller/replica_objects.h"

namespace tj::op {
namespace {

using nlohmann::json;

std::string Label(const v1alpha1::TrainingJob& job, const char* key) {
  auto it = job.metadata.labels.find(key);
  return it == job.metadata.labels.end() ? "" : it->second;
}

const json* Condition(const json& object, std::string_view type) {
  if (!object.contains("status") || !object["status"].is_object()) return nullptr;
  const json& status = object["status"];
  if (!status.contains("conditions") || !status["conditions"].is_array()) return nullptr;
  for (const json& c : status["conditions"]) {
    if (c.is_object() && c.value("type", "") == type) return &c;
  }
  return nullptr;
}

bool IsTrue(const json* condition) {
  return condition != nullptr && condition->value("status", "") == "True";
}

// Sets a metav1.Condition in `conditions`: the transition time moves only when the status does.
void SetCondition(json& conditions, const std::string& type, bool status, const std::string& reason,
                  const std::string& message, int64_t generation, absl::Time now) {
  const std::string value = status ? "True" : "False";
  json condition = {{"type", type},
                    {"status", value},
                    {"reason", reason},
                    {"message", message},
                    {"observedGeneration", generation},
                    {"lastTransitionTime", v1alpha1::FormatKubernetesTime(now)}};
  for (json& c : conditions) {
    if (c.value("type", "") != type) continue;
    if (c.value("status", "") == value && c.contains("lastTransitionTime")) {
      condition["lastTransitionTime"] = c["lastTransitionTime"];
    }
    c = condition;
    return;
  }
  conditions.push_back(condition);
}

json StatusToWrite(const json& workload, int64_t* generation) {
  json status = workload.contains("status") && workload["status"].is_object() ? workload["status"]
                                                                              : json::object();
  if (!status.contains("conditions") || !status["conditions"].is_array()) {
    status["conditions"] = json::array();
  }
  *generation =
      workload.contains("metadata") ? workload["metadata"].value("generation", int64_t{0}) : 0;
  return status;
}

}  // namespace

kube::ResourceRef KueueResource(std::string_view resource, std::string ns, std::string name) {
  kube::ResourceRef ref;
  ref.group = "kueue.x-k8s.io";
  ref.version = "v1beta2";
  ref.resource = std::string(resource);
  const bool cluster_scoped = resource == "resourceflavors" ||
                              resource == "workloadpriorityclasses" || resource == "clusterqueues";
  if (!cluster_scoped) ref.namespace_name = std::move(ns);
  ref.name = std::move(name);
  return ref;
}

std::string QueueNameOf(const v1alpha1::TrainingJob& job) { return Label(job, kQueueNameLabel); }
std::string PriorityClassOf(const v1alpha1::TrainingJob& job) {
  return Label(job, kPriorityClassLabel);
}

std::string WorkloadName(const v1alpha1::TrainingJob& job) {
  if (std::string prebuilt = Label(job, kPrebuiltWorkloadLabel); !prebuilt.empty()) {
    return prebuilt;
  }
  return "trainingjob-" + job.metadata.name;
}

bool UsesPrebuiltWorkload(const v1alpha1::TrainingJob& job) {
  return !Label(job, kPrebuiltWorkloadLabel).empty();
}

std::string_view PodSetName(ReplicaType type) {
  switch (type) {
    case ReplicaType::kCoordinator:
      return "coordinator";
    case ReplicaType::kPs:
      return "ps";
    case ReplicaType::kWorker:
      return "worker";
  }
  return "?";
}

std::optional<ReplicaType> PodSetType(std::string_view name) {
  for (ReplicaType type : {ReplicaType::kCoordinator, ReplicaType::kPs, ReplicaType::kWorker}) {
    if (PodSetName(type) == name) return type;
  }
  return std::nullopt;
}

json BuildWorkload(const v1alpha1::TrainingJob& job, std::optional<int32_t> priority) {
  std::map<ReplicaType, int32_t> counts;
  for (const Replica& replica : DesiredReplicas(job)) ++counts[replica.key.type];
  json pod_sets = json::array();
  for (const auto& [type, count] : counts) {
    auto spec = job.spec.replica_specs.find(type);
    if (spec == job.spec.replica_specs.end()) continue;
    const json& raw = spec->second.pod_template.raw();
    json metadata = json::object();
    if (raw.contains("metadata") && raw["metadata"].is_object()) {
      for (const char* field : {"labels", "annotations"}) {
        if (raw["metadata"].contains(field)) metadata[field] = raw["metadata"][field];
      }
    }
    json template_json = {{"metadata", metadata},
                          {"spec", raw.contains("spec") ? raw["spec"] : json::object()}};
    pod_sets.push_back(
        {{"name", std::string(PodSetName(type))}, {"count", count}, {"template", template_json}});
  }
  json spec = {{"queueName", QueueNameOf(job)},
               {"podSets", pod_sets},
               {"active", !job.spec.run_policy.suspend.value_or(false)}};
  if (const std::string pc = PriorityClassOf(job); !pc.empty() && priority) {
    spec["priorityClassRef"] = {
        {"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", pc}};
    spec["priority"] = *priority;
  }
  return {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
          {"kind", "Workload"},
          {"metadata",
           {{"name", WorkloadName(job)},
            {"namespace",
             job.metadata.namespace_name.empty() ? "default" : job.metadata.namespace_name},
            {"labels", {{kQueueNameLabel, QueueNameOf(job)}}},
            {"ownerReferences", json::array({ControllerReference(job)})}}},
          {"spec", spec}};
}

WorkloadReading ReadWorkload(const json& workload) {
  WorkloadReading read;
  auto from = [&](const json* c) {
    if (c == nullptr) return;
    read.reason = c->value("reason", "");
    read.message = c->value("message", "");
  };
  const json& status = workload.contains("status") ? workload["status"] : json();
  const bool reserved = IsTrue(Condition(workload, "QuotaReserved")) && status.is_object() &&
                        status.contains("admission") && status["admission"].is_object();
  if (const json* finished = Condition(workload, "Finished"); IsTrue(finished)) {
    read.state = WorkloadState::kFinished;
    from(finished);
  } else if (const json* evicted = Condition(workload, "Evicted"); IsTrue(evicted) && reserved) {
    read.state = WorkloadState::kEvicted;
    from(evicted);
  } else if (const json* admitted = Condition(workload, "Admitted"); IsTrue(admitted) && reserved) {
    read.state = WorkloadState::kAdmitted;
    from(admitted);
    const json& assignments = status["admission"].value("podSetAssignments", json::array());
    for (const json& a : assignments) {
      std::optional<ReplicaType> type = PodSetType(a.value("name", ""));
      if (!type) continue;
      std::vector<std::string>& names = read.flavors[*type];
      const json flavors = a.value("flavors", json::object());
      for (const auto& [resource, flavor] : flavors.items()) {
        if (flavor.is_string() &&
            std::find(names.begin(), names.end(), flavor.get<std::string>()) == names.end()) {
          names.push_back(flavor.get<std::string>());
        }
      }
    }
  } else {
    read.state = WorkloadState::kPending;
    from(Condition(workload, "QuotaReserved"));
    if (read.message.empty()) from(Condition(workload, "Admitted"));
  }
  return read;
}

bool HasController(const json& object) {
  if (!object.contains("metadata") || !object["metadata"].is_object()) return false;
  const json refs = object["metadata"].value("ownerReferences", json::array());
  if (!refs.is_array()) return false;
  return std::any_of(refs.begin(), refs.end(), [](const json& ref) {
    return ref.is_object() && ref.value("controller", false);
  });
}

json AdoptionPatch(const json& workload, const v1alpha1::TrainingJob& job) {
  const json& meta = workload.contains("metadata") ? workload["metadata"] : json::object();
  json refs = meta.value("ownerReferences", json::array());
  if (!refs.is_array()) refs = json::array();
  refs.push_back(ControllerReference(job));
  json patch = {{"metadata", {{"ownerReferences", refs}}}};
  if (meta.contains("resourceVersion")) {
    patch["metadata"]["resourceVersion"] = meta["resourceVersion"];
  }
  // A label value is at most 63 characters: a UID (36) always fits.
  if (job.metadata.uid) patch["metadata"]["labels"] = {{kJobUidLabel, *job.metadata.uid}};
  return patch;
}

std::string PodSetMismatch(const json& workload, const v1alpha1::TrainingJob& job) {
  std::map<std::string, int64_t> want;
  const json built = BuildWorkload(job, std::nullopt);  // outlives the loop (a range-for over a
                                                        // member of a temporary would not)
  for (const json& set : built["spec"]["podSets"]) {
    want[set.value("name", "")] = set.value("count", int64_t{0});
  }
  std::map<std::string, int64_t> have;
  const json& spec = workload.contains("spec") ? workload["spec"] : json::object();
  const json sets = spec.value("podSets", json::array());
  if (sets.is_array()) {
    for (const json& set : sets) {
      if (set.is_object()) have[set.value("name", "")] = set.value("count", int64_t{0});
    }
  }
  for (const auto& [name, count] : want) {
    auto it = have.find(name);
    if (it == have.end()) return absl::StrCat("it has no PodSet ", name);
    if (it->second != count) {
      return absl::StrCat("its PodSet ", name, " counts ", it->second, " pods, the job has ",
                          count);
    }
  }
  for (const auto& [name, count] : have) {
    if (!want.contains(name)) return absl::StrCat("its PodSet ", name, " is no role of the job");
  }
  return "";
}

void AddFlavor(const json& flavor, Placement& placement) {
  const json& spec = flavor.contains("spec") ? flavor["spec"] : json::object();
  if (spec.contains("nodeLabels") && spec["nodeLabels"].is_object()) {
    placement.node_selector.update(spec["nodeLabels"]);
  }
  if (spec.contains("tolerations") && spec["tolerations"].is_array()) {
    for (const json& t : spec["tolerations"]) {
      const auto& list = placement.tolerations;
      if (std::find(list.begin(), list.end(), t) == list.end()) placement.tolerations.push_back(t);
    }
  }
}

void ApplyPlacement(const Placement& placement, json& pod) {
  json& spec = pod["spec"];
  if (!placement.node_selector.empty()) {
    if (!spec.contains("nodeSelector") || !spec["nodeSelector"].is_object()) {
      spec["nodeSelector"] = json::object();
    }
    spec["nodeSelector"].update(placement.node_selector);
  }
  for (const json& t : placement.tolerations) {
    if (!spec.contains("tolerations") || !spec["tolerations"].is_array()) {
      spec["tolerations"] = json::array();
    }
    const json& list = spec["tolerations"];
    if (std::find(list.begin(), list.end(), t) == list.end()) spec["tolerations"].push_back(t);
  }
}

json ReleasedWorkloadStatus(const json& workload, const WorkloadReading& read, absl::Time now) {
  int64_t generation = 0;
  json status = StatusToWrite(workload, &generation);
  status.erase("admission");
  json& conditions = status["conditions"];
  const bool preempted = read.reason == "Preempted";
  SetCondition(conditions, "Requeued", preempted, read.reason.empty() ? "Evicted" : read.reason,
               read.message, generation, now);
  SetCondition(conditions, "QuotaReserved", false, "Pending", read.message, generation, now);
  SetCondition(conditions, "Admitted", false, "NoReservation", "The workload has no reservation",
               generation, now);
  return status;
}

json FinishedWorkloadStatus(const json& workload, bool succeeded, const std::string& message,
                            absl::Time now) {
  int64_t generation = 0;
  json status = StatusToWrite(workload, &generation);
  SetCondition(status["conditions"], "Finished", true, succeeded ? "Succeeded" : "Failed", message,
               generation, now);
  return status;
}

}  // namespace tj::op
