// A cancellation flag shared between a blocking call (a watch, a stream) and the thread that wants
// it to stop; the transport hooks in the code that aborts its connection.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <utility>
#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"

namespace tj::kube {

// Lets another thread stop a streaming call. Shared because the transport may still hold it
// while the caller goes away.
class Cancellation {
 public:
  void Cancel() {
    cancelled_.store(true);
    std::function<void()> hook;
    {
      StdMutexLock lock(mu_);
      hook = hook_;
    }
    if (hook) hook();
  }
  bool cancelled() const { return cancelled_.load(); }
  // The transport installs a hook that aborts the connection; runs at once if already cancelled.
  void SetHook(std::function<void()> hook) {
    {
      StdMutexLock lock(mu_);
      hook_ = std::move(hook);
    }
    if (cancelled()) Cancel();
  }

 private:
  std::atomic<bool> cancelled_{false};
  StdMutex mu_;
  std::function<void()> hook_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tj::kube
