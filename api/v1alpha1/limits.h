// The TrainingJob's size limits, one place for the CRD (crds/, as OpenAPI maxima and CEL),
// `tjctl validate` and the operator, which refuses a job beyond them before it allocates anything
// for the job's replicas. docs/trainingjob-schema.md#limits says why each value.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tj::v1alpha1 {

// Replicas of one type (PS, Worker; the Coordinator is exactly 1). Every replica's TF_CONFIG lists
// every replica, so a pod's environment grows with the job and the bytes the API server and the
// operator's caches hold for the job's pods grow with its square.
inline constexpr int32_t kMaxReplicasPerType = 1000;
// Coordinator + PS + Worker.
inline constexpr int64_t kMaxTotalReplicas = 1000;
// A replica type's pod template as JSON. It is copied into each of the type's pods; the largest
// real templates (sidecars, init containers, long env lists) are a few tens of KiB.
inline constexpr size_t kMaxPodTemplateBytes = 64 * 1024;
// Containers per pod template and env entries per container (also the CRD's maxItems, which
// bound the cost of its CEL rules).
inline constexpr size_t kMaxContainers = 32;
inline constexpr size_t kMaxEnvVars = 512;
inline constexpr size_t kMaxEnvNameLength = 512;
// Linux's MAX_ARG_STRLEN (32 pages of 4 KiB): the longest single "NAME=value" environment string,
// with its terminating NUL, that execve accepts; TF_CONFIG must fit.
inline constexpr size_t kMaxEnvironmentStringBytes = 128 * 1024;

}  // namespace tj::v1alpha1
