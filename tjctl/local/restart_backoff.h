// RestartBackoff: how long `tjctl run` waits before starting a replica again, Kubernetes crash-loop
// style but scaled for a workstation: the first restart is immediate, then 0.5 s doubling up to
// 10 s; a replica that ran for 60 s before it ended starts over at "immediate". One per replica.
// Whether a replica restarts at all is DecideJobPhase's decision, never this class's.
#pragma once

#include "absl/time/time.h"

namespace tj::local {

struct RestartBackoffPolicy {
  absl::Duration initial = absl::Milliseconds(500);  // the second consecutive restart's delay
  absl::Duration max = absl::Seconds(10);
  absl::Duration reset_after = absl::Seconds(60);  // a run this long clears the history
};

class RestartBackoff {
 public:
  explicit RestartBackoff(RestartBackoffPolicy policy = {}) : policy_(policy) {}

  // The delay before the next start of a replica whose last run lasted `last_run`; advances the
  // count of consecutive restarts.
  absl::Duration Next(absl::Duration last_run);
  int consecutive() const { return consecutive_; }

 private:
  RestartBackoffPolicy policy_;
  int consecutive_ = 0;  // restarts since the last run that lasted reset_after
};

}  // namespace tj::local
