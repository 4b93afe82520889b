// WorkQueue: the controller's queue of keys ("namespace/name"), with the semantics of client-go's
// workqueue.RateLimitingInterface (a plain queue, a delaying queue and a rate-limiting queue in
// one):
//
//  - Add: a key is queued at most once however often it is added before a worker takes it (the
//    dirty set). A key added while a worker processes it is not handed to anyone else: it is queued
//    again when that worker calls Done. So a key is never processed by two workers at once, and an
//    Add is never lost: the key is processed (again) after the Add.
//  - Get blocks until a key is queued or the queue is shut down. After ShutDown, Get still hands
//  out
//    the keys already queued, and returns nullopt once none is left (as client-go).
//  - AddAfter(key, delay): the key is added when the delay has passed (on the queue's clock). While
//    it waits, a second AddAfter of the same key keeps the earlier deadline. A delay <= 0 adds now.
//  - AddRateLimited(key) = AddAfter(key, rate_limiter.When(key)); Forget(key) resets the key's
//    failures; NumRequeues(key) counts them. The default limiter is DefaultControllerRateLimiter().
//  - ShutDown: Add/AddAfter are ignored from then on, keys waiting for their delay are dropped, and
//    every blocked Get wakes. ShutDownWithDrain also waits until every key handed out is Done (a
//    ShutDown from another thread ends the wait).
//
// Delayed keys wait in a heap served by one thread, started by the first AddAfter with a positive
// delay. With a FakeWorkQueueClock, keys that become due are queued by FakeWorkQueueClock::Advance
// itself, before it returns.
//
// Typical worker:
//   while (auto key = queue.Get()) {
//     absl::Status status = Reconcile(*key);
//     if (status.ok()) queue.Forget(*key); else queue.AddRateLimited(*key);
//     queue.Done(*key);
//   }
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "coordinator/base/std_mutex.h"
#include "operator/kube/rate_limiter.h"
#include "operator/kube/work_queue_clock.h"

namespace tj::kube {

struct WorkQueueOptions {
  // Default member initializers, so {.name = "x"} compiles with -Wextra
  // (missing-field-initializers).
  std::string name = "";                                // for the operator's metrics and logs
  std::shared_ptr<WorkQueueClock> clock = nullptr;      // null: real time
  std::unique_ptr<RateLimiter> rate_limiter = nullptr;  // null: DefaultControllerRateLimiter(clock)
};

// The queue's counters, named after client-go's workqueue metrics.
struct WorkQueueMetrics {
  uint64_t adds_total = 0;  // Adds that queued a key (not the ones folded into a queued key)
  size_t depth = 0;         // keys added and not yet handed out (includes keys re-queued on Done)
  uint64_t retries_total = 0;  // AddAfter / AddRateLimited calls
  size_t waiting = 0;          // keys waiting for their delay
  size_t processing = 0;       // keys handed out and not yet Done
  absl::Duration longest_running_processor = absl::ZeroDuration();  // oldest key being processed
  absl::Duration unfinished_work = absl::ZeroDuration();            // sum over keys being processed
};

class WorkQueue {
 public:
  explicit WorkQueue(WorkQueueOptions options = {});
  // Shuts the queue down and joins its delay thread. No thread may still be using the queue.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Add(const std::string& key);
  void AddAfter(const std::string& key, absl::Duration delay);
  void AddRateLimited(const std::string& key);
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key) const;

  // The next key, or nullopt once the queue is shut down and empty. The caller must call Done(key).
  std::optional<std::string> Get();
  // The worker finished `key`; if it was added meanwhile, it is queued again. A key that is not
  // being processed is ignored.
  void Done(const std::string& key);

  void ShutDown();
  void ShutDownWithDrain();
  bool ShuttingDown() const;

  // Keys ready to be handed out (not those being processed, nor those waiting for a delay).
  size_t Len() const;

  const std::string& name() const { return name_; }
  uint64_t AddsTotal() const;
  size_t Depth() const;
  uint64_t RetriesTotal() const;
  absl::Duration LongestRunningProcessor() const;
  absl::Duration UnfinishedWork() const;
  WorkQueueMetrics Metrics() const;

 private:
  void AddLocked(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the keys whose delay has passed into the queue.
  void QueueDueLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ShutDownLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DelayLoop();

  const std::string name_;
  const std::shared_ptr<WorkQueueClock> clock_;
  const std::unique_ptr<RateLimiter> rate_limiter_;
  WorkQueueClock::ListenerId listener_ = 0;

  // A std::mutex (see work_queue_clock.h for why) with thread-safety attributes: what it guards is
  // checked by clang (scripts/check-thread-safety.sh).
  mutable StdMutex mu_;
  std::condition_variable get_cv_;      // a key was queued, or shutdown
  std::condition_variable delay_cv_;    // a new earliest deadline, or shutdown
  std::condition_variable drained_cv_;  // nothing is being processed any more, or ShutDown
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  std::unordered_set<std::string> dirty_ ABSL_GUARDED_BY(mu_);
  std::unordered_map<std::string, absl::Time> processing_ ABSL_GUARDED_BY(mu_);  // -> since
  // Keys waiting for their delay, by (deadline, order of arrival), and each key's place there.
  using WaitSlot = std::pair<absl::Time, uint64_t>;
  std::map<WaitSlot, std::string> waiting_ ABSL_GUARDED_BY(mu_);
  std::unordered_map<std::string, WaitSlot> waiting_slot_ ABSL_GUARDED_BY(mu_);
  uint64_t next_wait_seq_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread delay_thread_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t adds_total_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t retries_total_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tj::kube
