#include "operator/controller/write_executor.h"

#include <algorithm>
#include <utility>
#include "coordinator/base/std_mutex.h"

namespace tj::op {

ThreadPoolWriteExecutor::ThreadPoolWriteExecutor(int threads, size_t queue_capacity)
    : capacity_(std::max<size_t>(queue_capacity, 1)) {
  for (int i = 0; i < std::max(threads, 1); ++i) threads_.emplace_back([this] { Run(); });
}

ThreadPoolWriteExecutor::~ThreadPoolWriteExecutor() { Stop(); }

void ThreadPoolWriteExecutor::Submit(std::function<void()> write, bool urgent) {
  StdMutexLock lock(mu_);
  has_room_.wait(lock.native(), [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || QueuedLocked() < capacity_; });
  if (stopping_) return;
  (urgent ? urgent_ : queue_).push_back(std::move(write));
  has_work_.notify_one();
}

void ThreadPoolWriteExecutor::Stop() {
  {
    StdMutexLock lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    urgent_.clear();
    queue_.clear();
  }
  has_work_.notify_all();
  has_room_.notify_all();
  idle_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  StdMutexLock lock(mu_);
  threads_.clear();
}

size_t ThreadPoolWriteExecutor::Queued() const {
  StdMutexLock lock(mu_);
  return QueuedLocked();
}

bool ThreadPoolWriteExecutor::WaitIdle(std::chrono::milliseconds timeout) {
  StdMutexLock lock(mu_);
  return idle_.wait_for(lock.native(), timeout,
                        [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || (QueuedLocked() == 0 && running_ == 0); });
}

void ThreadPoolWriteExecutor::Run() {
  StdMutexLock lock(mu_);
  while (true) {
    has_work_.wait(lock.native(), [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || QueuedLocked() > 0; });
    if (stopping_) return;
    std::deque<std::function<void()>>& from = urgent_.empty() ? queue_ : urgent_;
    std::function<void()> write = std::move(from.front());
    from.pop_front();
    ++running_;
    has_room_.notify_one();
    lock.unlock();
    write();
    lock.lock();
    --running_;
    if (QueuedLocked() == 0 && running_ == 0) idle_.notify_all();
  }
}

}  // namespace tj::op
