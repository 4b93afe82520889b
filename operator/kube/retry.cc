#include "operator/kube/retry.h"

namespace tj::kube {

absl::Duration RetryDelay(const RetryPolicy& policy, const absl::Status& status, int attempt) {
  if (std::optional<absl::Duration> server = RetryAfter(status)) {
    return std::min(*server, policy.max_backoff);
  }
  absl::Duration delay = policy.initial_backoff;
  for (int i = 2; i < attempt && delay < policy.max_backoff; ++i) delay *= 2;
  return std::min(delay, policy.max_backoff);
}

}  // namespace tj::kube
