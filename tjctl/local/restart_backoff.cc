#include "tjctl/local/restart_backoff.h"

#include <algorithm>

namespace tj::local {

absl::Duration RestartBackoff::Next(absl::Duration last_run) {
  if (last_run >= policy_.reset_after) consecutive_ = 0;
  absl::Duration delay = absl::ZeroDuration();
  if (consecutive_ > 0) {
    delay = policy_.initial;
    for (int i = 1; i < consecutive_ && delay < policy_.max; ++i) delay *= 2;
    delay = std::min(delay, policy_.max);
  }
  ++consecutive_;
  return delay;
}

}  // namespace tj::local
