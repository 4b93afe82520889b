// What a GrpcPreemptionNotifier reported, collected from its background thread so a test can wait
// for the first n outcomes (shared by the notifier's and the TLS tests).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "operator/controller/preemption_notifier.h"

namespace tj::op {

class NoticeOutcomes {
 public:
  void Add(const NoticeOutcome& outcome) {
    std::lock_guard<std::mutex> lock(mu_);
    outcomes_.push_back(outcome);
    cv_.notify_all();
  }
  // The outcomes so far, once there are at least `n` of them or 30 s have passed.
  std::vector<NoticeOutcome> WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(30), [&] { return outcomes_.size() >= n; });
    return outcomes_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<NoticeOutcome> outcomes_;
};

}  // namespace tj::op
