// When a checkpoint save that its storage refused or did not answer (IsCheckpointStorageError:
// credentials revoked, bucket gone, endpoint down) is tried again. A periodic save is not: training
// goes on and the next interval saves. The final save (end of training) is, a bounded number of
// times, since nothing after it would save the trained state. The preemption save is, as long as
// another attempt can end before the notice's deadline. Every refused attempt leaves no manifest,
// so trying again never leaves a checkpoint half-written.
#pragma once

#include <optional>

#include "absl/time/time.h"

namespace tj::sdk {

struct CheckpointRetryPolicy {
  // Attempts of the final save, and of a preemption save whose deadline is not known.
  int final_attempts = 5;
  // The wait before the second attempt, doubled after each further failed one, at most
  // max_backoff: 1 + 2 + 4 + 8 s between the default five attempts.
  absl::Duration first_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Seconds(30);
  // The waits between attempts to take the checkpoint location at start (its claim write, then
  // the restore) while its storage refuses them: the coordinator is held, not training, until one
  // succeeds, however long that takes (StartAttemptIn).
  absl::Duration start_first_backoff = absl::Seconds(1);
  absl::Duration start_max_backoff = absl::Seconds(60);
};

// The wait after the start's attempt number `attempt` (1-based) was refused: start_first_backoff
// doubled after each further refusal, at most start_max_backoff. There is always another attempt.
absl::Duration StartAttemptIn(const CheckpointRetryPolicy& policy, int attempt);

// How long to wait before another attempt, once attempt number `attempt` (1-based) failed at `now`
// after taking `took`. Nullopt when none may follow: `attempt` is `max_attempts`, or an attempt
// taking as long as this one would not end before `deadline` even started at once. The wait is
// shortened so that the attempt after it still ends before the deadline.
std::optional<absl::Duration> NextSaveAttemptIn(const CheckpointRetryPolicy& policy, int attempt,
                                                int max_attempts, absl::Time deadline,
                                                absl::Duration took, absl::Time now);

}  // namespace tj::sdk
