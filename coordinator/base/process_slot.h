// A process-wide value loaded on first use (from the environment, say) and replaceable by tests,
// under a lock the compiler checks: the job's token, verifiers, TLS files, coordinator generation
// and checkpoint directory are read this way by every RPC handler and channel.
#pragma once

#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"

namespace tj {

template <typename T>
class ProcessSlot {
 public:
  // The value, from `load()` on the first call. The reference stays valid until the next Set, which
  // only tests call, before the code under test reads it.
  template <typename Load>
  const T& Get(Load&& load) {
    StdMutexLock lock(mu_);
    if (!value_.has_value()) value_.emplace(load());
    return *value_;
  }

  void Set(T value) {
    StdMutexLock lock(mu_);
    value_ = std::move(value);
  }

 private:
  StdMutex mu_;
  std::optional<T> value_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tj
