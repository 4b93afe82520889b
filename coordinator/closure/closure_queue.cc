#include "coordinator/closure/closure_queue.h"

#include <spdlog/spdlog.h>

#include <cassert>
#include <utility>

namespace tj {

ClosureQueue::ClosureQueue(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

void ClosureQueue::SetCancelInflightHook(std::function<void()> hook) {
  absl::MutexLock lock(&mu_);
  cancel_inflight_hook_ = std::move(hook);
}

absl::Status ClosureQueue::Put(ClosurePtr closure) {
  absl::MutexLock put_lock(&put_wait_mu_);
  absl::MutexLock lock(&mu_);
  while (queue_.size() >= capacity_ && error_.ok() && !stopped_) free_slot_cv_.Wait(&mu_);
  if (!error_.ok()) return RaiseIfErrorLocked();
  if (stopped_) return absl::CancelledError("the coordinator is shutting down");
  queue_.push_back(std::move(closure));
  ++counts_.scheduled;
  queued_cv_.Signal();
  return absl::OkStatus();
}

absl::Status ClosureQueue::PutOrDispatch(ClosurePtr closure, const DirectDispatch& dispatch) {
  // put_wait_mu_ stays held throughout: no error can be raised (and no in-flight count awaited)
  // between counting the closure in flight and knowing where it went.
  absl::MutexLock put_lock(&put_wait_mu_);
  {
    absl::MutexLock lock(&mu_);
    while (queue_.size() >= capacity_ && error_.ok() && !stopped_) free_slot_cv_.Wait(&mu_);
    if (!error_.ok()) return RaiseIfErrorLocked();
    if (stopped_) return absl::CancelledError("the coordinator is shutting down");
    ++counts_.scheduled;
    if (!queue_.empty() || cancelling_ || !dispatch) {
      queue_.push_back(std::move(closure));
      queued_cv_.Signal();
      return absl::OkStatus();
    }
    ++inflight_;
  }
  if (dispatch(closure)) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  if (stopped_) {
    closure->MarkCancelled();
    ++counts_.cancelled;
  } else {
    // Queued even if an error became pending meanwhile: the next raise cancels it with the rest.
    queue_.push_back(std::move(closure));
    queued_cv_.Signal();
  }
  DecrementInflightLocked();
  return absl::OkStatus();
}

std::vector<ClosurePtr> ClosureQueue::GetBatch(size_t max, absl::Time deadline,
                                               const std::function<bool()>& interrupted) {
  std::vector<ClosurePtr> batch;
  absl::MutexLock lock(&mu_);
  auto is_interrupted = [&] { return interrupted != nullptr && interrupted(); };
  while ((queue_.empty() || cancelling_) && !stopped_ && !is_interrupted()) {
    if (queued_cv_.WaitWithDeadline(&mu_, deadline)) break;
  }
  if (stopped_ || cancelling_ || is_interrupted()) return batch;
  const size_t n = std::min(max, queue_.size());
  batch.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  inflight_ += n;
  if (n > 0) free_slot_cv_.SignalAll();
  return batch;
}

ClosurePtr ClosureQueue::Get(absl::Time deadline) {
  auto batch = GetBatch(1, deadline);
  return batch.empty() ? nullptr : std::move(batch.front());
}

void ClosureQueue::DecrementInflightLocked() {
  // Crash loudly: an unbalanced count is a bug in the runtime, not a condition to handle.
  assert(inflight_ > 0 && "closure marked done that was never in flight");
  if (inflight_ == 0) {
    spdlog::critical("ClosureQueue: in-flight count underflow");
    std::abort();
  }
  --inflight_;
  if (inflight_ == 0) inflight_zero_cv_.SignalAll();
  if (IdleLocked()) idle_or_error_cv_.SignalAll();
}

void ClosureQueue::PutBack(ClosurePtr closure) {
  absl::MutexLock lock(&mu_);
  if (!error_.ok() || stopped_) {
    closure->MarkCancelled();
    ++counts_.cancelled;
  } else {
    queue_.push_front(std::move(closure));
    ++counts_.retried;
    queued_cv_.Signal();
  }
  DecrementInflightLocked();
}

void ClosureQueue::Return(std::vector<ClosurePtr> closures) {
  if (closures.empty()) return;
  absl::MutexLock lock(&mu_);
  for (auto it = closures.rbegin(); it != closures.rend(); ++it) {
    if (stopped_) {
      (*it)->MarkCancelled();
      ++counts_.cancelled;
    } else {
      queue_.push_front(std::move(*it));
    }
    DecrementInflightLocked();
  }
  queued_cv_.SignalAll();
}

void ClosureQueue::MarkFinished() {
  absl::MutexLock lock(&mu_);
  ++counts_.completed;
  DecrementInflightLocked();
}

void ClosureQueue::MarkFailed(absl::Status error) {
  absl::MutexLock lock(&mu_);
  ++counts_.failed;
  if (error_.ok()) {
    error_ = std::move(error);
    idle_or_error_cv_.SignalAll();
    free_slot_cv_.SignalAll();  // a blocked Put must wake up and raise it
  }
  DecrementInflightLocked();
}

absl::Status ClosureQueue::RaiseIfErrorLocked() {
  if (error_.ok()) return absl::OkStatus();
  spdlog::error("cancelling scheduled closures because one failed: {}", error_.ToString());
  cancelling_ = true;
  if (cancel_inflight_hook_) cancel_inflight_hook_();
  queued_cv_.SignalAll();  // dispatchers blocked in GetBatch must see their interrupt flags
  while (inflight_ > 0) inflight_zero_cv_.Wait(&mu_);
  for (auto& closure : queue_) closure->MarkCancelled();
  counts_.cancelled += queue_.size();
  queue_.clear();
  free_slot_cv_.SignalAll();
  cancelling_ = false;
  absl::Status error = std::exchange(error_, absl::OkStatus());
  return error;
}

absl::Status ClosureQueue::Wait() {
  absl::MutexLock put_lock(&put_wait_mu_);
  absl::MutexLock lock(&mu_);
  while (error_.ok() && !IdleLocked() && !stopped_) idle_or_error_cv_.Wait(&mu_);
  return RaiseIfErrorLocked();
}

absl::StatusOr<bool> ClosureQueue::WaitWithTimeout(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::MutexLock put_lock(&put_wait_mu_);
  absl::MutexLock lock(&mu_);
  while (error_.ok() && !IdleLocked() && !stopped_) {
    if (idle_or_error_cv_.WaitWithDeadline(&mu_, deadline)) break;
  }
  if (!error_.ok()) return RaiseIfErrorLocked();
  return IdleLocked() || stopped_;
}

absl::StatusOr<bool> ClosureQueue::Done() {
  absl::MutexLock put_lock(&put_wait_mu_);
  absl::MutexLock lock(&mu_);
  if (!error_.ok()) return RaiseIfErrorLocked();
  return IdleLocked();
}

void ClosureQueue::AbortQueued(const absl::Status& error) {
  absl::MutexLock lock(&mu_);
  if (queue_.empty() && inflight_ == 0) return;
  for (auto& closure : queue_) closure->output->SetError(error);
  counts_.failed += queue_.size();
  queue_.clear();
  if (error_.ok()) error_ = error;
  free_slot_cv_.SignalAll();
  idle_or_error_cv_.SignalAll();
}

void ClosureQueue::Wake() {
  absl::MutexLock lock(&mu_);
  queued_cv_.SignalAll();
}

void ClosureQueue::Stop() {
  absl::MutexLock lock(&mu_);
  stopped_ = true;
  for (auto& closure : queue_) closure->MarkCancelled();
  counts_.cancelled += queue_.size();
  queue_.clear();
  queued_cv_.SignalAll();
  free_slot_cv_.SignalAll();
  idle_or_error_cv_.SignalAll();
}

size_t ClosureQueue::queued() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

ClosureCounts ClosureQueue::counts() const {
  absl::MutexLock lock(&mu_);
  return counts_;
}

size_t ClosureQueue::inflight() const {
  absl::MutexLock lock(&mu_);
  return inflight_;
}

}  // namespace tj
