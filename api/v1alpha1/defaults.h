// Defaulting for TrainingJob: fills every unset optional field with the documented default, the
// same values the CRD's OpenAPI `default:`s give. Pure; the input is not modified.
#pragma once

#include <cstdint>
#include <vector>

#include "api/v1alpha1/types.h"

namespace tj::v1alpha1 {

inline constexpr int32_t kDefaultReplicas = 1;
// ExitCode for every type: the restart exit code (a coordinator that lost a PS) and the signals
// of preemption restart; a program's own error (exit 1) fails the job instead of looping.
inline constexpr RestartPolicy kDefaultRestartPolicy = RestartPolicy::kExitCode;
// Kubernetes Job's default: a job that keeps failing stops after 6 counted restarts.
inline constexpr int32_t kDefaultBackoffLimit = 6;
inline constexpr CleanPodPolicy kDefaultCleanPodPolicy = CleanPodPolicy::kRunning;
// The coordinator and a PS hold the training state: two of one at once (a new one restoring into
// a PS about to go) cost a restore more. A worker is stateless: its replacement need not wait.
// Not filled in by WithDefaults: the CRD shares one replica schema between the types, so its
// default cannot differ by type, and both sides leave the field unset.
inline constexpr ReplacementPolicy DefaultReplacementPolicy(ReplicaType type) {
  return type == ReplicaType::kWorker ? ReplacementPolicy::kTerminatingOrFailed
                                      : ReplacementPolicy::kFailed;
}
inline constexpr int32_t kDefaultRestartExitCode = 42;
// Same as the runtime's CoordinatorOptions (docs/architecture.md).
inline constexpr int64_t kDefaultWorkerRecoveryTimeoutSeconds = 3600;
inline constexpr int32_t kDefaultTransientPsFailureThreshold = 3;
inline constexpr int64_t kDefaultPreemptionGracePeriodSeconds = 0;
inline constexpr int32_t kDefaultCheckpointKeep = 3;
// A full checkpoint, then 9 holding only the embedding rows changed since the one before (docs/
// decisions.md, Session 7: incremental checkpoints).
inline constexpr int32_t kDefaultCheckpointFullEvery = 10;
inline constexpr int32_t kMaxCheckpointFullEvery = 1000;

// Replica specs that are absent stay absent (validation reports them); templates are untouched.
TrainingJob WithDefaults(TrainingJob job);

}  // namespace tj::v1alpha1
