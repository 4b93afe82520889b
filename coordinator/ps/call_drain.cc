#include "coordinator/ps/call_drain.h"

namespace tj {

CallDrain::Admission::~Admission() {
  if (drain_ == nullptr) return;
  std::lock_guard lock(drain_->mu_);
  if (--drain_->running_ == 0) drain_->finished_.notify_all();
}

std::optional<CallDrain::Admission> CallDrain::Admit() {
  std::lock_guard lock(mu_);
  if (closed_) return std::nullopt;
  ++running_;
  return Admission(this);
}

int64_t CallDrain::CloseAndDrain(absl::Time deadline) {
  std::unique_lock lock(mu_);
  closed_ = true;
  auto drained = [this] { return running_ == 0; };
  if (deadline == absl::InfiniteFuture()) {
    finished_.wait(lock, drained);
  } else {
    finished_.wait_until(lock, absl::ToChronoTime(deadline), drained);
  }
  return running_;
}

}  // namespace tj
