// A bounded retry for calls the API server asked us to repeat (429 throttling, 5xx, dropped
// connections: all Unavailable), honouring its Retry-After and giving up after a fixed budget.
#pragma once

#include <algorithm>
#include <functional>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "operator/kube/api_error.h"

namespace tj::kube {

struct RetryPolicy {
  int max_attempts = 5;  // 1 = no retry
  absl::Duration initial_backoff = absl::Milliseconds(100);
  absl::Duration max_backoff = absl::Seconds(10);  // also caps a server's Retry-After
  // Injected so tests do not sleep.
  std::function<void(absl::Duration)> sleep = [](absl::Duration d) { absl::SleepFor(d); };
};

// The delay before attempt `attempt` (1-based, so the first retry is attempt 2).
absl::Duration RetryDelay(const RetryPolicy& policy, const absl::Status& status, int attempt);

inline bool IsRetryable(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable;
}

// Calls `fn` until it returns something other than Unavailable or the attempts run out.
template <typename T>
absl::StatusOr<T> WithRetry(const RetryPolicy& policy,
                            const std::function<absl::StatusOr<T>()>& fn) {
  absl::StatusOr<T> result = fn();
  for (int attempt = 2;
       attempt <= policy.max_attempts && !result.ok() && IsRetryable(result.status()); ++attempt) {
    policy.sleep(RetryDelay(policy, result.status(), attempt));
    result = fn();
  }
  return result;
}

}  // namespace tj::kube
