// The job's NetworkPolicy (BuildJobNetworkPolicy), made before its pods: created, and when one of
// that name exists, accepted only if the job controls it. Not watched and not patched back: an
// edit by hand stays until the policy is deleted (the garbage collector does, with the job) and
// an operator process that has not confirmed it yet makes it again.
#pragma once

#include "absl/status/status.h"
#include "api/v1alpha1/types.h"
#include "operator/controller/replica_objects.h"
#include "operator/kube/kube_client.h"

namespace tj::op {

// OK when the policy exists and the job controls it; FailedPrecondition when a NetworkPolicy of
// that name belongs to something else; the API error otherwise.
absl::Status EnsureJobNetworkPolicy(kube::KubeClient& client, const v1alpha1::TrainingJob& job,
                                    const NetworkPolicyOptions& options);

}  // namespace tj::op
