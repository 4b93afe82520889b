// The time source of the work queue and its rate limiters: real time, or a fake clock that tests
// move by hand, so backoffs and delays are checked without sleeping.
//
// Waiting goes through the clock (WaitUntil) so a fake clock can count who is blocked and wake them
// when it jumps. A StdMutex (std::mutex with thread-safety attributes), not absl::Mutex: Debian's
// Abseil is not built with TSan, which would then report every access an absl::Mutex guards
// (docs/decisions.md); with std primitives the queue is checked by `TJ_SANITIZE=thread`. A
// component that waits on a fake clock registers an advance listener; the listener takes the
// component's own lock and signals its condition variables, so no wakeup is lost (the waiter checks
// the time and starts waiting under that lock).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "coordinator/base/std_mutex.h"

namespace tj::kube {

class WorkQueueClock {
 public:
  using ListenerId = uint64_t;

  virtual ~WorkQueueClock() = default;

  virtual absl::Time Now() const = 0;

  // With `lock` held: blocks on `cv` until it is notified or this clock reaches `deadline`
  // (absl::InfiniteFuture(): no deadline). May return early; callers re-check their condition.
  virtual void WaitUntil(StdMutexLock& lock, std::condition_variable& cv,
                         absl::Time deadline) const = 0;

  // `on_advance` is called whenever the clock jumps (never for real time, which moves by itself),
  // with none of the clock's locks that Now() takes held; it may lock the caller's mutex and call
  // Now(). It must not add or remove listeners. After RemoveAdvanceListener returns, the listener
  // is not running and is never called again.
  virtual ListenerId AddAdvanceListener(std::function<void()> on_advance) = 0;
  virtual void RemoveAdvanceListener(ListenerId id) = 0;
};

class RealWorkQueueClock final : public WorkQueueClock {
 public:
  // A process-wide instance, never destroyed.
  static std::shared_ptr<WorkQueueClock> Shared();

  absl::Time Now() const override;
  void WaitUntil(StdMutexLock& lock, std::condition_variable& cv,
                 absl::Time deadline) const override;
  ListenerId AddAdvanceListener(std::function<void()> /*on_advance*/) override { return 0; }
  void RemoveAdvanceListener(ListenerId /*id*/) override {}
};

// A clock that moves only when told. Thread-safe.
class FakeWorkQueueClock final : public WorkQueueClock {
 public:
  explicit FakeWorkQueueClock(absl::Time start = absl::FromUnixSeconds(1'700'000'000));

  absl::Time Now() const override;
  void WaitUntil(StdMutexLock& lock, std::condition_variable& cv,
                 absl::Time deadline) const override;
  ListenerId AddAdvanceListener(std::function<void()> on_advance) override;
  void RemoveAdvanceListener(ListenerId id) override;

  // Moves the clock forward (a negative duration is ignored) and calls the listeners; returns
  // after they have run.
  void Advance(absl::Duration duration);

  // How many threads are blocked in WaitUntil now, and a wait (on a condition, not a sleep) until
  // at least `count` are: tests use it to know that a Get or a drain is blocked before acting.
  size_t waiters() const;
  void AwaitWaiters(size_t count) const;

 private:
  // listeners_mu_ is taken before the listeners' own mutexes, which are taken before mu_.
  StdMutex listeners_mu_;
  std::map<ListenerId, std::function<void()>> listeners_ ABSL_GUARDED_BY(listeners_mu_);
  ListenerId next_listener_ ABSL_GUARDED_BY(listeners_mu_) = 1;

  mutable StdMutex mu_;
  mutable std::condition_variable waiters_changed_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  mutable size_t waiters_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tj::kube
