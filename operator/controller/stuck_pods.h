// Pods that cannot start on their own, as Kubernetes reports them: unschedulable, an image that
// cannot be pulled, a container that cannot be created. The job gets the Stuck condition and a
// Warning Event naming the reason, and fails once runPolicy.pendingTimeoutSeconds has passed since
// such a pod was created. A stuck pod is never a counted restart: waiting is not a failure.
// Pure functions of the JSON objects and the clock.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace tj::op {

struct ObservedPod;

struct PodStuck {
  // As Kubernetes says it: Unschedulable (the PodScheduled condition), or the trainer container's
  // waiting reason (ErrImagePull, ImagePullBackOff, InvalidImageName, CreateContainerError,
  // CreateContainerConfigError).
  std::string reason;
  std::string message;  // Kubernetes' own, as it is
};

// Why this pod, not running yet, cannot start on its own; nullopt when it is merely on its way
// (scheduled and pulling, say) or not pending at all.
std::optional<PodStuck> PodStuckReason(const nlohmann::json& pod);

// The message names this many stuck pods and counts the rest: a thousand unplaceable workers
// must not make the condition (and the Event, and every status write) a hundred kilobytes.
inline constexpr size_t kStuckPodsNamed = 5;

struct StuckJudgement {
  std::string reason;   // the first stuck pod's (coordinator first, then PS, then workers)
  std::string message;  // the first kStuckPodsNamed stuck pods, with their reasons; then a count
  // runPolicy.pendingTimeoutSeconds has passed since the longest-stuck pod was created.
  bool timed_out = false;
  // When it will have, for a requeue; unset without a timeout or once timed out.
  std::optional<absl::Duration> time_left;
};

// Over the job's pods: nullopt when none is stuck. `pending_timeout` unset: never timed out.
std::optional<StuckJudgement> JudgeStuckPods(const std::vector<ObservedPod>& pods, absl::Time now,
                                             std::optional<absl::Duration> pending_timeout);

}  // namespace tj::op
