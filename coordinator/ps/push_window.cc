#include "coordinator/ps/push_window.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "coordinator/ps/memory_budget.h"
#include "spdlog/spdlog.h"

namespace tj {

int64_t PushWindowBytesFor(int64_t budget_bytes) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  if (budget_bytes <= 0) return 256 * kMiB;
  return std::clamp<int64_t>(budget_bytes / 8, 64 * kMiB, 512 * kMiB);
}

int64_t PushWindowBytesFromEnvironment() {
  if (const char* env = std::getenv("TJ_PS_PUSH_WINDOW_BYTES"); env != nullptr && *env != '\0') {
    int64_t bytes = 0;
    if (absl::SimpleAtoi(env, &bytes) && bytes >= 0) return bytes;
    spdlog::warn("TJ_PS_PUSH_WINDOW_BYTES='{}' ignored: not a number of bytes", env);
  }
  return PushWindowBytesFor(std::max<int64_t>(0, ReadMemoryBudget().available_bytes -
                                                     kPsMemoryHeadroomBytes));
}

int64_t GrpcMemoryBytesFor(int64_t window_bytes) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  if (window_bytes <= 0) return 0;
  return window_bytes + std::max(window_bytes, 64 * kMiB);
}

int64_t GrpcMemoryBytesFromEnvironment(int64_t window_bytes) {
  if (const char* env = std::getenv("TJ_PS_GRPC_MEMORY_BYTES"); env != nullptr && *env != '\0') {
    int64_t bytes = 0;
    if (absl::SimpleAtoi(env, &bytes) && bytes >= 0) return bytes;
    spdlog::warn("TJ_PS_GRPC_MEMORY_BYTES='{}' ignored: not a number of bytes", env);
  }
  return GrpcMemoryBytesFor(window_bytes);
}

int64_t LargestPushBytes(int64_t grpc_memory_bytes, int64_t window_bytes) {
  if (grpc_memory_bytes <= 0) return -1;
  return std::max<int64_t>(0, grpc_memory_bytes - std::max<int64_t>(0, window_bytes));
}

PushWindow::Ticket::Ticket(Ticket&& other) noexcept
    : window_(std::exchange(other.window_, nullptr)), bytes_(other.bytes_) {}

PushWindow::Ticket::~Ticket() {
  if (window_ != nullptr) window_->Release(bytes_);
}

std::optional<PushWindow::Ticket> PushWindow::Admit(int64_t bytes, absl::Time deadline) {
  bytes = std::max<int64_t>(0, bytes);
  StdMutexLock lock(mu_);
  if (capacity_ > 0) {
    const auto me = waiting_.insert(waiting_.end(), next_id_++);
    // A body larger than the whole window is admitted once nothing else is.
    const int64_t needed = std::min(bytes, capacity_);
    auto fits = [this, me, needed]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return waiting_.begin() == me && admitted_ + needed <= capacity_;
    };
    const bool admitted = changed_.wait_until(lock.native(), absl::ToChronoTime(deadline), fits);
    const bool was_first = waiting_.begin() == me;
    waiting_.erase(me);
    // The next in line may fit now.
    if (was_first) changed_.notify_all();
    if (!admitted) {
      ++held_back_;
      return std::nullopt;
    }
  }
  admitted_ += bytes;
  peak_ = std::max(peak_, admitted_);
  return Ticket(this, bytes);
}

void PushWindow::Release(int64_t bytes) {
  {
    StdMutexLock lock(mu_);
    admitted_ -= bytes;
  }
  changed_.notify_all();
}

int64_t PushWindow::peak_bytes() const {
  StdMutexLock lock(mu_);
  return peak_;
}

int PushWindow::waiting() const {
  StdMutexLock lock(mu_);
  return static_cast<int>(waiting_.size());
}

int64_t PushWindow::held_back() const {
  StdMutexLock lock(mu_);
  return held_back_;
}

}  // namespace tj
