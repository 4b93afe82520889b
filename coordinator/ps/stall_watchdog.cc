#include "coordinator/ps/stall_watchdog.h"

#include <utility>

#include "absl/time/clock.h"

namespace tj {

StallWatchdog::StallWatchdog(grpc::ClientContext& context, absl::Duration timeout)
    // TryCancel is thread-safe, and harmless on a call that already finished.
    : StallWatchdog([&context] { context.TryCancel(); }, timeout) {}

StallWatchdog::StallWatchdog(std::function<void()> on_stall, absl::Duration timeout)
    : on_stall_(std::move(on_stall)),
      timeout_(timeout),
      last_progress_(absl::Now()),
      thread_([this] { Watch(); }) {}

StallWatchdog::~StallWatchdog() { Stop(); }

void StallWatchdog::Progress() {
  absl::MutexLock lock(&mu_);
  last_progress_ = absl::Now();
}

void StallWatchdog::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    wake_.Signal();
  }
  if (thread_.joinable()) thread_.join();
}

bool StallWatchdog::stalled() const {
  absl::MutexLock lock(&mu_);
  return stalled_;
}

void StallWatchdog::Watch() {
  absl::MutexLock lock(&mu_);
  while (!stopped_) {
    // Progress() only moves the deadline later, so waking at the old deadline and looking again
    // is enough; nobody needs to signal on progress.
    const absl::Time deadline = last_progress_ + timeout_;
    if (absl::Now() >= deadline) {
      stalled_ = true;
      on_stall_();
      return;
    }
    wake_.WaitWithDeadline(&mu_, deadline);
  }
}

}  // namespace tj
