// Where the reconciler's API writes run. A reconcile decides, records what it expects
// (CreationExpectations) and hands the creates here, so a worker is not held while its writes
// wait on a busy API server; the writes' outcomes come back through their own callbacks.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>
#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"

namespace tj::op {

class WriteExecutor {
 public:
  virtual ~WriteExecutor() = default;
  // Runs `write` (which reports its own outcome) now or later, on some thread. `urgent` writes
  // go before every other one waiting (a burst's pods before its Services).
  virtual void Submit(std::function<void()> write, bool urgent = false) = 0;
};

// Runs each write in the caller's thread before Submit returns: tests and tools that read
// through DirectClusterView and want a reconcile's writes done when it returns.
class InlineWriteExecutor : public WriteExecutor {
 public:
  void Submit(std::function<void()> write, bool /*urgent*/ = false) override { write(); }
};

// A fixed number of threads (the writes in flight at once) taking writes in FIFO order from a
// bounded queue, urgent ones first. Submit blocks while the queue is full: the back-pressure that keeps a huge burst
// from holding unbounded memory (the workers then wait, as they did when they wrote themselves).
// Stop() (and the destructor) drops what is still queued and joins the threads after the
// writes in flight: the next leader's reconciles redo whatever was dropped.
class ThreadPoolWriteExecutor : public WriteExecutor {
 public:
  ThreadPoolWriteExecutor(int threads, size_t queue_capacity);
  ~ThreadPoolWriteExecutor() override;

  void Submit(std::function<void()> write, bool urgent = false) override;
  void Stop();

  size_t Queued() const;
  // Waits until nothing is queued or running (tests); false on timeout.
  bool WaitIdle(std::chrono::milliseconds timeout);

 private:
  void Run();
  size_t QueuedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return urgent_.size() + queue_.size(); }

  const size_t capacity_;
  mutable StdMutex mu_;
  std::condition_variable has_work_;
  std::condition_variable has_room_;
  std::condition_variable idle_;
  std::deque<std::function<void()>> urgent_ ABSL_GUARDED_BY(mu_);
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace tj::op
