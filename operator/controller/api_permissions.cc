#include "operator/controller/api_permissions.h"

namespace tj::op {

const std::vector<ApiPermission>& OperatorApiPermissions() {
  static const auto* const kPermissions = new std::vector<ApiPermission>{
      {"trainingjob.dev", "trainingjobs", {"list", "watch", "delete"}, ApiScope::kJobs,
       ApiFeature::kAlways, true,
       "the job informer (Controller); delete: ttlSecondsAfterFinished "
       "(Reconciler::ReconcileFinished)"},
      {"trainingjob.dev", "trainingjobs/status", {"update"}, ApiScope::kJobs, ApiFeature::kAlways,
       true, "status writes (Reconciler::WriteStatus, the first status write)"},
      {"trainingjob.dev", "trainingjobs/finalizers", {"update"}, ApiScope::kJobs,
       ApiFeature::kAlways, false,
       "not called: pods, Services and Secrets name the job with blockOwnerDeletion, which the "
       "OwnerReferencesPermissionEnforcement admission plugin allows only to who may update "
       "the owner's finalizers"},
      {"", "pods", {"list", "watch", "create", "delete"}, ApiScope::kJobs, ApiFeature::kAlways,
       true, "the pod informer; one pod per replica; restarts, scale-down, cleanPodPolicy"},
      {"", "services", {"list", "watch", "create", "delete"}, ApiScope::kJobs,
       ApiFeature::kAlways, true,
       "the Service informer; one headless Service per replica; scale-down"},
      {"", "secrets", {"get", "create", "patch"}, ApiScope::kJobs, ApiFeature::kAlways, true,
       "the job's credentials Secret, read by name (JobSecrets), never listed or watched; get: "
       "also the checkpoint bucket's credentials Secret (spec.checkpoint.s3, "
       "Reconciler::CheckpointStorageProblem); patch: role credentials added to a Secret made "
       "before them"},
      {"", "persistentvolumeclaims", {"get", "create"}, ApiScope::kJobs, ApiFeature::kAlways,
       true,
       "the job's checkpoint claim (spec.checkpoint.volume), read by name before the coordinator "
       "or a PS is created, created from claimTemplate (Reconciler::EnsureCheckpointVolume); "
       "never deleted by the operator (the garbage collector does, under reclaimPolicy Delete)"},
      {"", "events", {"create", "patch"}, ApiScope::kJobs, ApiFeature::kAlways, true,
       "Events on jobs (EventRecorder; repeats are patched counts)"},
      {"", "nodes", {"list", "watch"}, ApiScope::kCluster, ApiFeature::kAlways, true,
       "the node informer: a replica's node going NotReady or away"},
      {"coordination.k8s.io", "leases", {"get", "create", "update"}, ApiScope::kLeaseNamespace,
       ApiFeature::kLeaderElection, true, "leader election (LeaderElector)"},
      {"scheduling.volcano.sh", "podgroups", {"get", "create", "patch"}, ApiScope::kJobs,
       ApiFeature::kVolcano, true, "the job's PodGroup (Reconciler::EnsurePodGroup)"},
      {"scheduling.x-k8s.io", "podgroups", {"get", "create", "patch"}, ApiScope::kJobs,
       ApiFeature::kSchedulerPlugins, true, "the job's PodGroup (Reconciler::EnsurePodGroup)"},
      {"networking.k8s.io", "networkpolicies", {"get", "create"}, ApiScope::kJobs,
       ApiFeature::kNetworkPolicy, true,
       "the job's NetworkPolicy (Reconciler::EnsureNetworkPolicy): create, get when it exists"},
      {"kueue.x-k8s.io", "workloads", {"list", "watch", "get", "create", "patch"},
       ApiScope::kJobs, ApiFeature::kKueue, true,
       "the Workload informer (Controller: Kueue's admission and eviction wake the job); a queued "
       "job's Workload (AdmissionStep): read by GET until the informer has listed, created once, "
       "spec.active patched to follow runPolicy.suspend; marked Finished (WorkloadFinishedStep)"},
      {"kueue.x-k8s.io", "workloads/status", {"update"}, ApiScope::kJobs, ApiFeature::kKueue, true,
       "the quota handed back once an evicted job's pods are gone (AdmissionStep), Finished when "
       "the job ends (WorkloadFinishedStep)"},
      {"kueue.x-k8s.io", "localqueues", {"get"}, ApiScope::kJobs, ApiFeature::kKueue, true,
       "whether a waiting job's LocalQueue exists (AdmissionStep)"},
      {"kueue.x-k8s.io", "resourceflavors", {"get"}, ApiScope::kCluster, ApiFeature::kKueue, true,
       "the admitted flavours' nodeLabels and tolerations (AdmissionStep)"},
      {"kueue.x-k8s.io", "workloadpriorityclasses", {"get"}, ApiScope::kCluster,
       ApiFeature::kKueue, true, "the priority of a job's Workload (AdmissionStep)"},
  };
  return *kPermissions;
}

const ApiPermission* FindApiPermission(std::string_view verb, std::string_view group,
                                       std::string_view resource, std::string_view subresource) {
  for (const ApiPermission& p : OperatorApiPermissions()) {
    if (p.group != group) continue;
    const std::string_view name = p.resource;
    const size_t slash = name.find('/');
    const std::string_view base = name.substr(0, slash);
    const std::string_view sub = slash == std::string_view::npos ? "" : name.substr(slash + 1);
    if (base != resource || sub != subresource) continue;
    for (std::string_view v : p.verbs) {
      if (v == verb) return &p;
    }
  }
  return nullptr;
}

}  // namespace tj::op
