// What one part of the reconciler remembers about each job ("namespace/name"), behind a lock of
// its own: each step keeps its own memory, so no lock is held across steps and what a lock guards
// is one small map the thread-safety analysis checks.
#pragma once

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"

namespace tj::op {

template <typename T>
class PerJob {
 public:
  // Runs fn(T&) under the lock on the job's entry, made (value-initialized) when missing, and
  // returns what fn returns. fn must not call back into this PerJob.
  template <typename F>
  auto With(const std::string& key, F&& fn) {
    StdMutexLock lock(mu_);
    return fn(by_job_[key]);
  }
  // Runs fn(T&) on the job's entry only if it has one (a job deleted meanwhile has none).
  template <typename F>
  void IfPresent(const std::string& key, F&& fn) {
    StdMutexLock lock(mu_);
    auto it = by_job_.find(key);
    if (it != by_job_.end()) fn(it->second);
  }
  // A copy of the job's entry, or T{} when it has none.
  T Get(const std::string& key) const {
    StdMutexLock lock(mu_);
    auto it = by_job_.find(key);
    return it == by_job_.end() ? T{} : it->second;
  }
  void Forget(const std::string& key) {
    StdMutexLock lock(mu_);
    by_job_.erase(key);
  }

 private:
  mutable StdMutex mu_;
  std::map<std::string, T> by_job_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tj::op
