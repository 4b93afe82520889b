// std::mutex and std::shared_mutex, and locks over them, carrying Clang's thread-safety attributes,
// so that ABSL_GUARDED_BY on fields guarded by them is checked by scripts/check-thread-safety.sh.
// Code that must stay visible to TSan uses std primitives rather than absl::Mutex (Debian's Abseil
// is not built with TSan; docs/decisions.md), and libstdc++'s std::mutex has no such attributes.
#pragma once

#include <mutex>
#include <shared_mutex>

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

// A reader/writer lock: readers share it (StdReaderLock), a writer holds it alone (StdWriterLock).
// Fields it guards are read under either and written under the writer's lock only.
class ABSL_LOCKABLE StdSharedMutex {
 public:
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  void lock_shared() ABSL_SHARED_LOCK_FUNCTION() { mu_.lock_shared(); }
  void unlock_shared() ABSL_UNLOCK_FUNCTION() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds `mu` shared for its scope, like std::shared_lock.
class ABSL_SCOPED_LOCKABLE StdReaderLock {
 public:
  explicit StdReaderLock(StdSharedMutex& mu) ABSL_SHARED_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_.lock_shared();
  }
  ~StdReaderLock() ABSL_UNLOCK_FUNCTION() { mu_.unlock_shared(); }
  StdReaderLock(const StdReaderLock&) = delete;
  StdReaderLock& operator=(const StdReaderLock&) = delete;

 private:
  StdSharedMutex& mu_;
};

// Holds `mu` exclusively for its scope, like std::unique_lock over a std::shared_mutex.
class ABSL_SCOPED_LOCKABLE StdWriterLock {
 public:
  explicit StdWriterLock(StdSharedMutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_.lock();
  }
  ~StdWriterLock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  StdWriterLock(const StdWriterLock&) = delete;
  StdWriterLock& operator=(const StdWriterLock&) = delete;

 private:
  StdSharedMutex& mu_;
};

}  // namespace tj
