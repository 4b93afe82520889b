#include "trainer/sdk/checkpoint_retry.h"

#include <algorithm>

namespace tj::sdk {
namespace {

// `first` doubled (attempt - 1) times, at most `cap`.
absl::Duration Doubled(absl::Duration first, absl::Duration cap, int attempt) {
  absl::Duration wait = first;
  for (int i = 1; i < attempt && wait < cap; ++i) wait *= 2;
  return std::min(wait, cap);
}

}  // namespace

std::optional<absl::Duration> NextSaveAttemptIn(const CheckpointRetryPolicy& policy, int attempt,
                                                int max_attempts, absl::Time deadline,
                                                absl::Duration took, absl::Time now) {
  if (attempt >= max_attempts) return std::nullopt;
  const absl::Duration wait = Doubled(policy.first_backoff, policy.max_backoff, attempt);
  // The latest start of an attempt that ends before the deadline.
  const absl::Duration room = deadline - took - now;
  if (room < absl::ZeroDuration()) return std::nullopt;
  return std::min(wait, room);
}

absl::Duration StartAttemptIn(const CheckpointRetryPolicy& policy, int attempt) {
  return Doubled(policy.start_first_backoff, policy.start_max_backoff, attempt);
}

}  // namespace tj::sdk
