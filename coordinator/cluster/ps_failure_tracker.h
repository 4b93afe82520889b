// PsFailureTracker: counts "PS unreachable" errors that workers report, per PS task. Below the
// threshold such an error is treated as transient (the closure runs again); at the threshold it is a
// PS failure, which the coordinator surfaces as Unavailable so its caller can restart from a checkpoint.
#pragma once

#include <cstdint>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace tj {

class PsFailureTracker {
 public:
  explicit PsFailureTracker(int threshold) : threshold_(threshold) {}

  // Records one error from `ps_task`; true if it should be ignored (the closure retried).
  bool RecordAndIgnore(int ps_task) {
    absl::MutexLock lock(&mu_);
    ++totals_[ps_task].errors;
    const bool ignore = threshold_ > 0 && ++counts_[ps_task] < threshold_;
    if (!ignore) ++totals_[ps_task].failures;
    return ignore;
  }
  // Per PS task, for metrics: every error reported, and those that were not ignored.
  struct Totals {
    int64_t errors = 0;
    int64_t failures = 0;
  };
  std::map<int, Totals> totals() const {
    absl::MutexLock lock(&mu_);
    return totals_;
  }
  int count(int ps_task) const {
    absl::MutexLock lock(&mu_);
    auto it = counts_.find(ps_task);
    return it == counts_.end() ? 0 : it->second;
  }

 private:
  const int threshold_;
  mutable absl::Mutex mu_;
  std::map<int, int> counts_ ABSL_GUARDED_BY(mu_);
  std::map<int, Totals> totals_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tj
