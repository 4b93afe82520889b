// Cancels a gRPC call that stops making progress: the bound for calls that may legitimately take
// any time (a checkpoint shard on a slow disk) but must not hang on a frozen peer. A total deadline
// would kill slow-but-working calls; a stall timeout only kills calls that went quiet.
#pragma once

#include <grpcpp/client_context.h>

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tj {

class StallWatchdog {
 public:
  // Starts watching: unless Progress() is called at least every `timeout`, `context` is cancelled
  // (TryCancel) and stalled() becomes true. `context` must outlive the watchdog.
  StallWatchdog(grpc::ClientContext& context, absl::Duration timeout);
  // The same for many calls at once (the RPCs of one windowed call): `on_stall` runs once, on the
  // watchdog's thread, when Progress() was not called for `timeout`; it cancels what is in flight.
  StallWatchdog(std::function<void()> on_stall, absl::Duration timeout);
  StallWatchdog(const StallWatchdog&) = delete;
  StallWatchdog& operator=(const StallWatchdog&) = delete;
  ~StallWatchdog();

  // The call moved: the timeout starts again.
  void Progress();
  // Stops watching (idempotent); the call is no longer cancelled after this returns.
  void Stop();
  // Whether the watchdog cancelled the call.
  bool stalled() const;
  absl::Duration timeout() const { return timeout_; }

 private:
  void Watch();

  const std::function<void()> on_stall_;
  const absl::Duration timeout_;
  mutable absl::Mutex mu_;
  absl::CondVar wake_;
  absl::Time last_progress_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool stalled_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: started once the fields it reads are set
};

}  // namespace tj
