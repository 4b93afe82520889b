// ClosureQueue: where scheduled closures wait for a worker. It counts closures in flight, keeps the
// first error a closure raised, and implements the coordinator's error contract: the error is raised
// once, by the next Put/Wait/Done, after queued closures are cancelled and in-flight ones drained.
//
// Differences from TensorFlow's _CoordinatedClosureQueue, on purpose:
//  - Put raises a pending error *before* enqueuing, so the failing Schedule call leaves nothing behind.
//  - PutBack never blocks: a put-back closure goes to the front (it is older than anything queued) and
//    may exceed the capacity, which only bounds Put. Blocking a worker's failure path on a full queue
//    could deadlock against a Put waiting for that worker.
//  - While an error is being raised, GetBatch hands out nothing, so no closure starts after the
//    cancellation began.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordinator/closure/closure.h"

namespace tj {

inline constexpr size_t kDefaultClosureQueueCapacity = 256 * 1024;

// What became of the closures that passed through the queue since it was made; each only grows.
// Counted under the queue's lock, which every event below already takes, so they cost the hot
// path an increment. Exported as tj_coordinator_closures_*_total (docs/metrics.md).
struct ClosureCounts {
  uint64_t scheduled = 0;  // accepted by Put/PutOrDispatch
  uint64_t completed = 0;  // finished on a worker (successfully, or stopped on purpose)
  uint64_t failed = 0;     // ended with an error for the user (MarkFailed, AbortQueued)
  uint64_t retried = 0;    // put back to run again after their worker failed or gave them up
  uint64_t cancelled = 0;  // dropped because an error was raised or the coordinator stopped
};

class ClosureQueue {
 public:
  explicit ClosureQueue(size_t capacity = kDefaultClosureQueueCapacity);
  ClosureQueue(const ClosureQueue&) = delete;
  ClosureQueue& operator=(const ClosureQueue&) = delete;

  // Called (with the queue's lock held) when a pending error starts the cancellation: it must ask every
  // worker to cancel its in-flight closures and return at once, without calling into the queue.
  void SetCancelInflightHook(std::function<void()> hook);

  // Enqueues a closure, blocking while the queue is full. If a closure failed since the last raise,
  // returns that error instead (after cancelling and draining), and does not enqueue.
  absl::Status Put(ClosurePtr closure);

  // As Put, but when nothing is queued the closure is first offered to `dispatch` (called without
  // the queue's lock, the closure already counted as in flight): if it returns true, the closure is
  // in flight on a worker exactly as if GetBatch had taken it; if false, it is queued as by Put.
  // This saves a lone closure the wake-up of a dispatcher thread.
  using DirectDispatch = std::function<bool(const ClosurePtr&)>;
  absl::Status PutOrDispatch(ClosurePtr closure, const DirectDispatch& dispatch);

  // Takes up to `max` closures, blocking until at least one is available, the deadline passes, the
  // queue is stopped, or `interrupted()` is true (it is evaluated under the queue's lock, so it must
  // only read atomics; whoever makes it true calls Wake()). Each closure taken counts as in flight
  // until PutBack, MarkFinished or MarkFailed.
  std::vector<ClosurePtr> GetBatch(size_t max, absl::Time deadline,
                                   const std::function<bool()>& interrupted = nullptr);
  ClosurePtr Get(absl::Time deadline = absl::InfiniteFuture());

  // An in-flight closure did not run to completion (its worker failed): run it again elsewhere, unless
  // an error is pending, in which case it is cancelled.
  void PutBack(ClosurePtr closure);
  // Closures taken by GetBatch that the taker cannot send after all (its window filled meanwhile):
  // back to the front of the queue in their order, no longer in flight, not counted as re-runs.
  void Return(std::vector<ClosurePtr> closures);
  // An in-flight closure finished (successfully, or cancelled on purpose).
  void MarkFinished();
  // An in-flight closure failed with an error for the user. Only the first error is kept.
  void MarkFailed(absl::Status error);

  // Blocks until every closure has finished, or raises the pending error.
  absl::Status Wait();
  // As Wait; gives false if the timeout expired first.
  absl::StatusOr<bool> WaitWithTimeout(absl::Duration timeout);
  // True if nothing is queued or in flight; raises the pending error.
  absl::StatusOr<bool> Done();

  // Fails everything: queued closures get `error`, and `error` is raised by the next Put/Wait/Done
  // (unless another error is already pending). Used when no worker is left to run anything.
  void AbortQueued(const absl::Status& error);

  // Wakes GetBatch callers so they re-check their interrupt flags.
  void Wake();
  // From now on GetBatch returns nothing; queued closures are cancelled. Used at shutdown.
  void Stop();

  size_t queued() const;
  size_t inflight() const;
  size_t capacity() const { return capacity_; }
  ClosureCounts counts() const;

 private:
  // Cancels queued closures, waits for in-flight ones, then returns the error and clears it.
  absl::Status RaiseIfErrorLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DecrementInflightLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool IdleLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return queue_.empty() && inflight_ == 0;
  }

  const size_t capacity_;
  // Serializes Put and Wait/Done callers so a raised error is seen by exactly one of them.
  absl::Mutex put_wait_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  absl::CondVar queued_cv_;     // a closure was queued, or getters must re-check
  absl::CondVar free_slot_cv_;  // a slot became free
  absl::CondVar idle_or_error_cv_;
  absl::CondVar inflight_zero_cv_;
  std::deque<ClosurePtr> queue_ ABSL_GUARDED_BY(mu_);
  size_t inflight_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  bool cancelling_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void()> cancel_inflight_hook_ ABSL_GUARDED_BY(mu_);
  ClosureCounts counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tj
