// spec.managedBy: which controller runs a TrainingJob. This operator runs a job whose managedBy is
// unset or kManagedByOperator and leaves every other job alone, so that another controller (Kueue's
// MultiKueue, which copies the job to a worker cluster and its status back) can own it. The value
// is fixed at creation (the CRD's rule; docs/kueue.md).
#pragma once

#include <cstddef>
#include <string_view>

#include "nlohmann/json.hpp"

namespace tj::v1alpha1 {

// The value naming this operator; unset means the same.
inline constexpr char kManagedByOperator[] = "trainingjob.dev/tj-operator";
// The value Kueue's MultiKueue sets on the jobs of its manager cluster.
inline constexpr char kManagedByMultiKueue[] = "kueue.x-k8s.io/multikueue";
// As for batch/v1 Job's spec.managedBy.
inline constexpr size_t kMaxManagedByLength = 63;

// Kubernetes' domain-prefixed path (as batch/v1 Job's managedBy): an RFC 1123 subdomain, '/', and
// a non-empty path of [A-Za-z0-9/-._~%!$&'()*+,;=:].
bool IsDomainPrefixedPath(std::string_view value);

// True when the manifest's spec.managedBy is a string other than kManagedByOperator. Read from the
// raw manifest so that a job another controller owns is left alone even when it is not valid here.
bool ManagedByAnotherController(const nlohmann::json& manifest);

}  // namespace tj::v1alpha1
