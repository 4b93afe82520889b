// WaitFor: waits for a condition that has no notification to block on (another process's state),
// checking it often; fails the wait after a generous timeout instead of hanging the suite.
#pragma once

#include <functional>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tj::testing {

inline bool WaitFor(const std::function<bool()>& condition,
                    absl::Duration timeout = absl::Seconds(60)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

}  // namespace tj::testing
