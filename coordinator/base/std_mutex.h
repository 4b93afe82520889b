// std::mutex, and a lock over it, carrying Clang's thread-safety attributes, so that
// ABSL_GUARDED_BY on fields guarded by a std::mutex is checked by scripts/check-thread-safety.sh.
// Code that must stay visible to TSan uses std primitives rather than absl::Mutex (Debian's Abseil
// is not built with TSan; docs/decisions.md), and libstdc++'s std::mutex has no such attributes.
#pragma once

#include <mutex>

#include "absl/base/thread_annotations.h"

namespace tj {

class ABSL_LOCKABLE StdMutex {
 public:
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  bool try_lock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) { return mu_.try_lock(); }

 private:
  friend class StdMutexLock;
  std::mutex mu_;
};

// Holds `mu` for its scope, like std::unique_lock.
class ABSL_SCOPED_LOCKABLE StdMutexLock {
 public:
  explicit StdMutexLock(StdMutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : lock_(mu.mu_) {}
  ~StdMutexLock() ABSL_UNLOCK_FUNCTION() {}
  StdMutexLock(const StdMutexLock&) = delete;
  StdMutexLock& operator=(const StdMutexLock&) = delete;

  // Releases and retakes the mutex within the scope (a call made without it, say).
  void unlock() ABSL_UNLOCK_FUNCTION() { lock_.unlock(); }
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { lock_.lock(); }

  // For std::condition_variable::wait. The wait releases the mutex and takes it again before it
  // returns; the analysis, like absl::CondVar's, treats the mutex as held throughout.
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace tj
