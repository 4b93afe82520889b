#include "operator/kube/work_queue.h"

#include <algorithm>
#include <utility>

namespace tj::kube {

WorkQueue::WorkQueue(WorkQueueOptions options)
    : name_(std::move(options.name)),
      clock_(options.clock != nullptr ? std::move(options.clock) : RealWorkQueueClock::Shared()),
      rate_limiter_(options.rate_limiter != nullptr ? std::move(options.rate_limiter)
                                                    : DefaultControllerRateLimiter(clock_)) {
  // A fake clock's jump queues the keys that became due and wakes every waiter to re-check.
  listener_ = clock_->AddAdvanceListener([this] {
    StdMutexLock lock(mu_);
    if (!shutting_down_) QueueDueLocked();
    get_cv_.notify_all();
    delay_cv_.notify_all();
    drained_cv_.notify_all();
  });
}

WorkQueue::~WorkQueue() {
  std::thread delay_thread;
  {
    StdMutexLock lock(mu_);
    ShutDownLocked();
    delay_thread = std::move(delay_thread_);
  }
  if (delay_thread.joinable()) delay_thread.join();
  clock_->RemoveAdvanceListener(listener_);
}

void WorkQueue::Add(const std::string& key) {
  StdMutexLock lock(mu_);
  AddLocked(key);
}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_) return;
  if (!dirty_.insert(key).second) return;  // already queued, or added again while processing
  ++adds_total_;
  if (processing_.contains(key)) return;  // Done queues it again
  queue_.push_back(key);
  get_cv_.notify_one();
}

void WorkQueue::AddAfter(const std::string& key, absl::Duration delay) {
  StdMutexLock lock(mu_);
  if (shutting_down_) return;
  ++retries_total_;
  if (delay <= absl::ZeroDuration()) {
    AddLocked(key);
    return;
  }
  const absl::Time deadline = clock_->Now() + delay;
  auto known = waiting_slot_.find(key);
  if (known != waiting_slot_.end()) {
    if (known->second.first <= deadline) return;  // the earlier deadline wins
    waiting_.erase(known->second);
    waiting_slot_.erase(known);
  }
  const WaitSlot slot{deadline, next_wait_seq_++};
  waiting_.emplace(slot, key);
  waiting_slot_.emplace(key, slot);
  if (!delay_thread_.joinable()) {
    delay_thread_ = std::thread([this] { DelayLoop(); });
  } else if (waiting_.begin()->first == slot) {
    delay_cv_.notify_one();  // the delay thread sleeps until a later deadline
  }
}

void WorkQueue::AddRateLimited(const std::string& key) {
  if (ShuttingDown()) return;
  AddAfter(key, rate_limiter_->When(key));
}

void WorkQueue::Forget(const std::string& key) { rate_limiter_->Forget(key); }

int WorkQueue::NumRequeues(const std::string& key) const { return rate_limiter_->NumRequeues(key); }

void WorkQueue::QueueDueLocked() {
  if (waiting_.empty()) return;
  const absl::Time now = clock_->Now();
  while (!waiting_.empty() && waiting_.begin()->first.first <= now) {
    auto first = waiting_.begin();
    std::string key = std::move(first->second);
    waiting_.erase(first);
    waiting_slot_.erase(key);
    AddLocked(key);
  }
}

void WorkQueue::DelayLoop() {
  StdMutexLock lock(mu_);
  while (!shutting_down_) {
    QueueDueLocked();
    const absl::Time deadline =
        waiting_.empty() ? absl::InfiniteFuture() : waiting_.begin()->first.first;
    clock_->WaitUntil(lock, delay_cv_, deadline);
  }
}

std::optional<std::string> WorkQueue::Get() {
  StdMutexLock lock(mu_);
  while (queue_.empty() && !shutting_down_) {
    clock_->WaitUntil(lock, get_cv_, absl::InfiniteFuture());
  }
  if (queue_.empty()) return std::nullopt;  // shut down
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  dirty_.erase(key);
  processing_.emplace(key, clock_->Now());
  return key;
}

void WorkQueue::Done(const std::string& key) {
  StdMutexLock lock(mu_);
  if (processing_.erase(key) == 0) return;
  if (dirty_.contains(key)) {
    // Added while it was being processed: its turn comes now. (Also after ShutDown, as client-go:
    // the Add was accepted before the shutdown.)
    queue_.push_back(key);
    get_cv_.notify_one();
  }
  if (processing_.empty()) drained_cv_.notify_all();
}

void WorkQueue::ShutDownLocked() {
  shutting_down_ = true;
  waiting_.clear();
  waiting_slot_.clear();
  get_cv_.notify_all();
  delay_cv_.notify_all();
}

void WorkQueue::ShutDown() {
  StdMutexLock lock(mu_);
  ShutDownLocked();
  draining_ = false;  // releases a ShutDownWithDrain waiting in another thread
  drained_cv_.notify_all();
}

void WorkQueue::ShutDownWithDrain() {
  StdMutexLock lock(mu_);
  ShutDownLocked();
  draining_ = true;
  while (draining_ && !processing_.empty()) {
    clock_->WaitUntil(lock, drained_cv_, absl::InfiniteFuture());
  }
}

bool WorkQueue::ShuttingDown() const {
  StdMutexLock lock(mu_);
  return shutting_down_;
}

size_t WorkQueue::Len() const {
  StdMutexLock lock(mu_);
  return queue_.size();
}

uint64_t WorkQueue::AddsTotal() const {
  StdMutexLock lock(mu_);
  return adds_total_;
}

size_t WorkQueue::Depth() const {
  StdMutexLock lock(mu_);
  return dirty_.size();
}

uint64_t WorkQueue::RetriesTotal() const {
  StdMutexLock lock(mu_);
  return retries_total_;
}

absl::Duration WorkQueue::LongestRunningProcessor() const {
  return Metrics().longest_running_processor;
}

absl::Duration WorkQueue::UnfinishedWork() const { return Metrics().unfinished_work; }

WorkQueueMetrics WorkQueue::Metrics() const {
  StdMutexLock lock(mu_);
  WorkQueueMetrics metrics;
  metrics.adds_total = adds_total_;
  metrics.depth = dirty_.size();
  metrics.retries_total = retries_total_;
  metrics.waiting = waiting_.size();
  metrics.processing = processing_.size();
  if (!processing_.empty()) {
    const absl::Time now = clock_->Now();
    for (const auto& [key, since] : processing_) {
      const absl::Duration running = std::max(absl::ZeroDuration(), now - since);
      metrics.longest_running_processor = std::max(metrics.longest_running_processor, running);
      metrics.unfinished_work += running;
    }
  }
  return metrics;
}

}  // namespace tj::kube
