#include "coordinator/ps/call_drain.h"

namespace tj {

CallDrain::Admission::~Admission() {
  if (drain_ == nullptr) return;
  StdMutexLock lock(drain_->mu_);
  if (--drain_->running_ == 0) drain_->finished_.notify_all();
}

std::optional<CallDrain::Admission> CallDrain::Admit() {
  StdMutexLock lock(mu_);
  if (closed_) return std::nullopt;
  ++running_;
  return Admission(this);
}

int64_t CallDrain::CloseAndDrain(absl::Time deadline) {
  StdMutexLock lock(mu_);
  closed_ = true;
  auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return running_ == 0; };
  if (deadline == absl::InfiniteFuture()) {
    finished_.wait(lock.native(), drained);
  } else {
    finished_.wait_until(lock.native(), absl::ToChronoTime(deadline), drained);
  }
  return running_;
}

}  // namespace tj
