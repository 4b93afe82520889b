#include "operator/controller/kueue_requests.h"

#include "absl/strings/str_cat.h"
#include "operator/controller/kueue_workload.h"
#include "operator/controller/job_reconcile.h"

namespace tj::op {

using nlohmann::json;

std::string DescribeRef(const kube::ResourceRef& ref) {
  return absl::StrCat(ref.namespace_name, ref.namespace_name.empty() ? "" : "/", ref.name);
}

absl::StatusOr<json> GetJobWorkload(ClusterView& view, kube::KubeClient& client,
                                    const v1alpha1::TrainingJob& job) {
  const kube::ResourceRef ref = KueueResource("workloads", JobNamespace(job), WorkloadName(job));
  std::optional<ObjectPtr> cached = view.WatchedWorkload(ref.namespace_name, ref.name);
  if (!cached) return client.Get(ref);
  if (*cached != nullptr) return **cached;
  if (UsesPrebuiltWorkload(job)) return client.Get(ref);
  // Just created and not seen by the watch yet: a create answers AlreadyExists and holds the job.
  return absl::NotFoundError(absl::StrCat("workload ", ref.name));
}

absl::StatusOr<std::optional<int32_t>> WorkloadPriority(kube::KubeClient& client,
                                                        const v1alpha1::TrainingJob& job) {
  const std::string name = PriorityClassOf(job);
  if (name.empty()) return std::optional<int32_t>();
  absl::StatusOr<json> pc = client.Get(KueueResource("workloadpriorityclasses", "", name));
  if (absl::IsNotFound(pc.status())) {
    return absl::NotFoundError(
        absl::StrCat("metadata.labels[", kPriorityClassLabel, "]: WorkloadPriorityClass ", name,
                     " does not exist; the job waits, without pods, until it does"));
  }
  if (!pc.ok()) return pc.status();
  return std::optional<int32_t>(pc->value("value", 0));
}

absl::Status SyncActive(kube::KubeClient& client, const json& workload,
                        const v1alpha1::TrainingJob& job) {
  const bool active = !job.spec.run_policy.suspend.value_or(false);
  if (workload.value("spec", json::object()).value("active", true) == active) {
    return absl::OkStatus();
  }
  const kube::ResourceRef ref = KueueResource("workloads", JobNamespace(job), WorkloadName(job));
  return client.MergePatch(ref, {{"spec", {{"active", active}}}}).status();
}

}  // namespace tj::op
