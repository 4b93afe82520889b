#include "operator/controller/network_policy.h"

#include "absl/strings/str_cat.h"
#include "operator/kube/resource.h"

namespace tj::op {

absl::Status EnsureJobNetworkPolicy(kube::KubeClient& client, const v1alpha1::TrainingJob& job,
                                    const NetworkPolicyOptions& options) {
  const std::string ns =
      job.metadata.namespace_name.empty() ? std::string("default") : job.metadata.namespace_name;
  auto ref = kube::Resource("networkpolicies", ns);
  if (!ref.ok()) return ref.status();
  // Create first: a new job (the usual case) costs one request; an existing one two.
  absl::StatusOr<nlohmann::json> created = client.Create(*ref, BuildJobNetworkPolicy(job, options));
  if (created.ok()) return absl::OkStatus();
  if (!absl::IsAlreadyExists(created.status())) return created.status();
  ref->name = job.metadata.name;
  absl::StatusOr<nlohmann::json> existing = client.Get(*ref);
  if (!existing.ok()) return existing.status();
  if (!ControlledBy(*existing, job.metadata.uid.value_or(""))) {
    return absl::FailedPreconditionError(absl::StrCat(
        "networkpolicy \"", job.metadata.name, "\" in namespace \"", ns,
        "\" exists and is not owned by this TrainingJob; the job's pods are not created until "
        "it is deleted or the job renamed"));
  }
  return absl::OkStatus();
}

}  // namespace tj::op
