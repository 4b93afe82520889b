#include "operator/controller/pod_group.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/labels.h"
#include "jobcontrol/replicas.h"

namespace tj::op {
namespace {

using nlohmann::json;

struct PodGroupApi {
  const char* group;
  const char* version;
};

PodGroupApi ApiOf(GangScheduler scheduler) {
  return scheduler == GangScheduler::kVolcano ? PodGroupApi{"scheduling.volcano.sh", "v1beta1"}
                                              : PodGroupApi{"scheduling.x-k8s.io", "v1alpha1"};
}

}  // namespace

std::string PodGroupName(const v1alpha1::TrainingJob& job) { return job.metadata.name; }

int32_t PodGroupMinMember(const v1alpha1::TrainingJob& job) {
  const auto& scheduling = job.spec.run_policy.scheduling_policy;
  if (scheduling && scheduling->min_available) return *scheduling->min_available;
  int32_t total = 0;  // counted, not listed: no allocation per replica
  for (ReplicaType type : v1alpha1::kReplicaTypes) total += ReplicaCount(job.spec, type);
  return total;
}

kube::ResourceRef PodGroupResource(GangScheduler scheduler, std::string namespace_name,
                                   std::string name) {
  const PodGroupApi api = ApiOf(scheduler);
  kube::ResourceRef ref;
  ref.group = api.group;
  ref.version = api.version;
  ref.resource = "podgroups";
  ref.namespace_name = std::move(namespace_name);
  ref.name = std::move(name);
  return ref;
}

std::string PodGroupApiName(GangScheduler scheduler) {
  return absl::StrCat("podgroups.", ApiOf(scheduler).group);
}

std::string PodGroupApiVersion(GangScheduler scheduler) {
  const PodGroupApi api = ApiOf(scheduler);
  return absl::StrCat(api.group, "/", api.version);
}

std::string GangSchedulerName(GangScheduler scheduler) {
  switch (scheduler) {
    case GangScheduler::kNone:
      return "none";
    case GangScheduler::kVolcano:
      return "volcano";
    case GangScheduler::kSchedulerPlugins:
      return "scheduler-plugins";
  }
  return "none";
}

json BuildPodGroup(const v1alpha1::TrainingJob& job, GangScheduler scheduler) {
  if (scheduler == GangScheduler::kNone) return json();
  json spec = {{"minMember", PodGroupMinMember(job)}};
  const auto& scheduling = job.spec.run_policy.scheduling_policy;
  if (scheduler == GangScheduler::kVolcano && scheduling) {
    if (scheduling->queue) spec["queue"] = *scheduling->queue;
    if (scheduling->priority_class) spec["priorityClassName"] = *scheduling->priority_class;
  }
  return json{{"apiVersion", PodGroupApiVersion(scheduler)},
              {"kind", "PodGroup"},
              {"metadata",
               {{"name", PodGroupName(job)},
                {"namespace", job.metadata.namespace_name.empty() ? std::string("default")
                                                                  : job.metadata.namespace_name},
                {"labels", {{v1alpha1::kJobNameLabel, job.metadata.name}}},
                {"ownerReferences", json::array({ControllerReference(job)})}}},
              {"spec", std::move(spec)}};
}

}  // namespace tj::op
