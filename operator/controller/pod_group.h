// The PodGroup a gang scheduler reads for a job (operator flag --gang-scheduler): Volcano's
// scheduling.volcano.sh/v1beta1 or the scheduler-plugins coscheduler's
// scheduling.x-k8s.io/v1alpha1. One PodGroup per job, named as the pods' group annotation/label
// names it (PodGroupName), owned by the job (the garbage collector deletes it with the job). Pure
// functions of the job.
#pragma once

#include <cstdint>
#include <string>

#include "api/v1alpha1/types.h"
#include "nlohmann/json.hpp"
#include "operator/controller/replica_objects.h"
#include "operator/kube/resource.h"

namespace tj::op {

// The group the job's pods reference (scheduling.k8s.io/group-name, scheduling.x-k8s.io/pod-group)
// and the PodGroup's name: the job's name.
std::string PodGroupName(const v1alpha1::TrainingJob& job);

// spec.runPolicy.schedulingPolicy.minAvailable, else every replica of the job (Kubeflow's
// default: the whole job starts together or not at all).
int32_t PodGroupMinMember(const v1alpha1::TrainingJob& job);

// Where the scheduler's PodGroups live: {group, version, "podgroups", namespace, name}.
// `scheduler` must not be kNone.
kube::ResourceRef PodGroupResource(GangScheduler scheduler, std::string namespace_name,
                                   std::string name = "");

// "podgroups.scheduling.volcano.sh": the CRD that must be installed, for messages.
std::string PodGroupApiName(GangScheduler scheduler);

// "scheduling.volcano.sh/v1beta1": the PodGroup's apiVersion.
std::string PodGroupApiVersion(GangScheduler scheduler);

// The --gang-scheduler value: "none", "volcano", "scheduler-plugins".
std::string GangSchedulerName(GangScheduler scheduler);

// The job's PodGroup, or null for kNone:
//  - Volcano: spec.minMember, spec.queue and spec.priorityClassName from schedulingPolicy (the
//    last two only when set: Volcano defaults the queue to "default");
//  - scheduler-plugins: spec.minMember (scheduleTimeoutSeconds is left to the coscheduler's
//    permitWaitingTimeSeconds: the job's API has no field for it).
// Neither gets spec.minResources: summing the pods' requests needs Kubernetes quantity arithmetic
// and, when minAvailable is below the replica count, a choice of which pods count; Volcano
// admits a PodGroup without minResources on minMember alone (docs/operator.md).
// Metadata: name, namespace, the trainingjob.dev/job-name label (as on the job's Secret), the
// controller ownerReference to the job.
nlohmann::json BuildPodGroup(const v1alpha1::TrainingJob& job, GangScheduler scheduler);

}  // namespace tj::op
