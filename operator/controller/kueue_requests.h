// The Kueue reads and writes that both sides of a queued job make (docs/kueue.md): the job that
// runs here (reconciler_admission.h) and the job MultiKueue dispatches from a manager cluster
// (multikueue_workload.h).
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "api/v1alpha1/types.h"
#include "nlohmann/json.hpp"
#include "operator/controller/cluster_view.h"
#include "operator/kube/kube_client.h"

namespace tj::op {

// "ns/name" for messages.
std::string DescribeRef(const kube::ResourceRef& ref);

// The job's Workload (WorkloadName) from the watch when there is one, else from the API.
// NotFound when it does not exist. A prebuilt Workload that no TrainingJob controls yet is not in
// the watch (it keeps only Workloads a TrainingJob controls), so for a job that names one a miss
// in the watch is asked of the API.
absl::StatusOr<nlohmann::json> GetJobWorkload(ClusterView& view, kube::KubeClient& client,
                                              const v1alpha1::TrainingJob& job);

// The value of the job's WorkloadPriorityClass (kueue.x-k8s.io/priority-class), nullopt without
// the label; NotFound, with a message naming the label, when the class does not exist.
absl::StatusOr<std::optional<int32_t>> WorkloadPriority(kube::KubeClient& client,
                                                        const v1alpha1::TrainingJob& job);

// runPolicy.suspend is the Workload's spec.active (Kueue evicts an inactive Workload and releases
// its quota): patches it when they differ.
absl::Status SyncActive(kube::KubeClient& client, const nlohmann::json& workload,
                        const v1alpha1::TrainingJob& job);

}  // namespace tj::op
