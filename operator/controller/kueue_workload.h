// The Kueue side of a TrainingJob labelled kueue.x-k8s.io/queue-name (docs/kueue.md): the Workload
// the operator creates for it, as Kueue's own job integrations do (one PodSet per role:
// coordinator, ps, worker, with the role's replica count and pod template, so Kueue sums the
// containers' requests; controlled by the job), what the Workload's status says for the job, and
// where an admission puts the job's pods (the admitted ResourceFlavors' nodeLabels and
// tolerations). Pure functions of the objects; reconciler_admission.h does the talking.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "api/v1alpha1/types.h"
#include "jobcontrol/replicas.h"
#include "nlohmann/json.hpp"
#include "operator/kube/resource.h"

namespace tj::op {

inline constexpr char kQueueNameLabel[] = "kueue.x-k8s.io/queue-name";
inline constexpr char kPriorityClassLabel[] = "kueue.x-k8s.io/priority-class";
// Names a Workload made for the job by someone else (MultiKueue's copy of a job in a worker
// cluster names the Workload it copied there): the job uses that one and never creates its own.
inline constexpr char kPrebuiltWorkloadLabel[] = "kueue.x-k8s.io/prebuilt-workload-name";
// Put on a Workload the job adopts, as Kueue's job integrations do.
inline constexpr char kJobUidLabel[] = "kueue.x-k8s.io/job-uid";

// A kueue.x-k8s.io/v1beta2 object (`resource`: "workloads", "localqueues", "resourceflavors",
// "workloadpriorityclasses"; the last two are cluster-scoped: `ns` empty).
kube::ResourceRef KueueResource(std::string_view resource, std::string ns = "",
                                std::string name = "");

// The job's queue-name and priority-class labels ("" when absent).
std::string QueueNameOf(const v1alpha1::TrainingJob& job);
std::string PriorityClassOf(const v1alpha1::TrainingJob& job);

// The job's Workload, one for the job's whole life: the prebuilt one its label names, else
// "trainingjob-<job name>".
std::string WorkloadName(const v1alpha1::TrainingJob& job);
// Whether the job is labelled with a prebuilt Workload (kPrebuiltWorkloadLabel).
bool UsesPrebuiltWorkload(const v1alpha1::TrainingJob& job);

// The PodSet of a role: "coordinator", "ps", "worker".
std::string_view PodSetName(ReplicaType type);
std::optional<ReplicaType> PodSetType(std::string_view name);

// The job's Workload: the queue, the priority (`priority`: the WorkloadPriorityClass's value,
// referenced with spec.priorityClassRef; unset without a priority class), spec.active false while
// runPolicy.suspend is true (Kueue then evicts it and releases its quota), one PodSet per role
// with the template's metadata labels and annotations and its spec.
nlohmann::json BuildWorkload(const v1alpha1::TrainingJob& job, std::optional<int32_t> priority);

// What the Workload's status says for the job.
enum class WorkloadState {
  kPending,   // no quota reserved (waiting, or inadmissible: `message` says why)
  kAdmitted,  // quota reserved and every admission check ready: the job may run
  kEvicted,   // Evicted True while it still holds the quota: the job must stop, then release it
  kFinished,  // Finished True
};
struct WorkloadReading {
  WorkloadState state = WorkloadState::kPending;
  std::string reason;  // of the condition that decided the state ("Preempted", "Pending", ...)
  std::string message;
  // kAdmitted: the flavours admitted per role (status.admission.podSetAssignments[].flavors).
  std::map<ReplicaType, std::vector<std::string>> flavors;
};
WorkloadReading ReadWorkload(const nlohmann::json& workload);

// Whether the object has a controller ownerReference (to anything).
bool HasController(const nlohmann::json& object);
// The merge patch by which the job adopts a prebuilt Workload that nothing controls: its
// ownerReferences plus the controller reference to the job, the job-uid label, and the
// Workload's resourceVersion (so a change meanwhile makes the patch a Conflict, not a blind
// overwrite).
nlohmann::json AdoptionPatch(const nlohmann::json& workload, const v1alpha1::TrainingJob& job);
// Empty when the prebuilt Workload's PodSets are the job's (the same names and counts, in any
// order); else what differs, naming the PodSet.
std::string PodSetMismatch(const nlohmann::json& workload, const v1alpha1::TrainingJob& job);

// Where the pods of one role go: the union of its admitted flavours' nodeLabels and tolerations.
struct Placement {
  nlohmann::json node_selector = nlohmann::json::object();
  nlohmann::json tolerations = nlohmann::json::array();
  friend bool operator==(const Placement&, const Placement&) = default;
};
using Placements = std::map<ReplicaType, Placement>;
// Adds a ResourceFlavor's spec.nodeLabels and spec.tolerations.
void AddFlavor(const nlohmann::json& flavor, Placement& placement);
// Merges the placement into a pod: its nodeSelector keys set (the flavour's value wins, as in
// Kueue's integrations), its tolerations appended unless already there.
void ApplyPlacement(const Placement& placement, nlohmann::json& pod);

// The Workload's status once the job's pods are gone after an eviction, as Kueue's job
// integrations write it: QuotaReserved False (Pending), Admitted False (NoReservation), Requeued
// True when evicted by preemption (False otherwise), status.admission removed. Other conditions
// (Evicted among them) are kept.
nlohmann::json ReleasedWorkloadStatus(const nlohmann::json& workload, const WorkloadReading& read,
                                      absl::Time now);
// The Workload's status with Finished True (`succeeded`: reason Succeeded, else Failed).
nlohmann::json FinishedWorkloadStatus(const nlohmann::json& workload, bool succeeded,
                                      const std::string& message, absl::Time now);

}  // namespace tj::op
