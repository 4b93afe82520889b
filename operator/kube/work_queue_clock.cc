#include "operator/kube/work_queue_clock.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/time/clock.h"

namespace tj::kube {

std::shared_ptr<WorkQueueClock> RealWorkQueueClock::Shared() {
  static const auto* const clock =
      new std::shared_ptr<WorkQueueClock>(std::make_shared<RealWorkQueueClock>());
  return *clock;
}

absl::Time RealWorkQueueClock::Now() const { return absl::Now(); }

void RealWorkQueueClock::WaitUntil(StdMutexLock& lock, std::condition_variable& cv,
                                   absl::Time deadline) const {
  if (deadline == absl::InfiniteFuture()) {
    cv.wait(lock.native());
    return;
  }
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return;
  // wait_for measures on the steady clock; a wall-clock jump only shifts when callers re-check.
  cv.wait_for(lock.native(), absl::ToChronoNanoseconds(std::min(left, absl::Hours(24))));
}

FakeWorkQueueClock::FakeWorkQueueClock(absl::Time start) : now_(start) {}

absl::Time FakeWorkQueueClock::Now() const {
  StdMutexLock guard(mu_);
  return now_;
}

void FakeWorkQueueClock::WaitUntil(StdMutexLock& lock, std::condition_variable& cv,
                                   absl::Time deadline) const {
  {
    StdMutexLock guard(mu_);
    if (now_ >= deadline) return;
    ++waiters_;
  }
  waiters_changed_.notify_all();
  // The caller holds `lock` from its last look at the clock until wait releases it, and listeners
  // take that lock before notifying, so an Advance in between cannot be missed. A deadline that
  // passes while waiting is always reached through Advance, which calls the listeners.
  cv.wait(lock.native());
  StdMutexLock guard(mu_);
  --waiters_;
}

FakeWorkQueueClock::ListenerId FakeWorkQueueClock::AddAdvanceListener(
    std::function<void()> on_advance) {
  StdMutexLock guard(listeners_mu_);
  const ListenerId id = next_listener_++;
  listeners_.emplace(id, std::move(on_advance));
  return id;
}

void FakeWorkQueueClock::RemoveAdvanceListener(ListenerId id) {
  StdMutexLock guard(listeners_mu_);
  listeners_.erase(id);
}

void FakeWorkQueueClock::Advance(absl::Duration duration) {
  {
    StdMutexLock guard(mu_);
    if (duration > absl::ZeroDuration()) now_ += duration;
  }
  StdMutexLock guard(listeners_mu_);
  for (const auto& [id, listener] : listeners_) listener();
}

size_t FakeWorkQueueClock::waiters() const {
  StdMutexLock guard(mu_);
  return waiters_;
}

void FakeWorkQueueClock::AwaitWaiters(size_t count) const {
  StdMutexLock lock(mu_);
  // The predicate runs with mu_ held (the wait retakes it before calling it).
  waiters_changed_.wait(lock.native(),
                        [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return waiters_ >= count; });
}

}  // namespace tj::kube
