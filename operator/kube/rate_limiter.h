// Rate limiters for the work queue, with the semantics and numbers of client-go's
// k8s.io/client-go/util/workqueue (default_rate_limiters.go). All are thread-safe.
//
//   DefaultControllerRateLimiter() = MaxOf(ItemExponentialFailure(5 ms, 1000 s), Bucket(10 qps,
//   100))
//
// so a key that keeps failing waits 5 ms, 10 ms, 20 ms, ... up to 1000 s, and all keys together are
// re-queued at no more than 10 per second once a burst of 100 is spent.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "coordinator/base/std_mutex.h"
#include "operator/kube/work_queue_clock.h"

namespace tj::kube {

class RateLimiter {
 public:
  virtual ~RateLimiter() = default;
  // How long `item` should wait before it is processed again. Each call counts as one more failure
  // (and takes a token from a bucket).
  virtual absl::Duration When(const std::string& item) = 0;
  // The item succeeded: stop tracking its failures.
  virtual void Forget(const std::string& item) = 0;
  // How many failures of `item` are being tracked.
  virtual int NumRequeues(const std::string& item) const = 0;
};

// base * 2^failures, capped at `max_delay` (client-go's ItemExponentialFailureRateLimiter).
class ItemExponentialFailureRateLimiter final : public RateLimiter {
 public:
  ItemExponentialFailureRateLimiter(absl::Duration base_delay, absl::Duration max_delay);

  absl::Duration When(const std::string& item) override;
  void Forget(const std::string& item) override;
  int NumRequeues(const std::string& item) const override;

 private:
  const absl::Duration base_delay_;
  const absl::Duration max_delay_;
  mutable StdMutex mu_;
  std::unordered_map<std::string, int> failures_ ABSL_GUARDED_BY(mu_);
};

// A token bucket shared by all items (client-go's BucketRateLimiter over golang.org/x/time/rate's
// Limiter.Reserve): it starts full with `burst` tokens, refills at `qps` per second, and each When
// takes a token, going into debt if there is none; the delay is the time until the debt is repaid.
// NumRequeues is always 0 and Forget does nothing.
class BucketRateLimiter final : public RateLimiter {
 public:
  BucketRateLimiter(double qps, int burst,
                    std::shared_ptr<const WorkQueueClock> clock = RealWorkQueueClock::Shared());

  absl::Duration When(const std::string& item) override;
  void Forget(const std::string& /*item*/) override {}
  int NumRequeues(const std::string& /*item*/) const override { return 0; }

 private:
  const double qps_;
  const double burst_;
  const std::shared_ptr<const WorkQueueClock> clock_;
  StdMutex mu_;
  double tokens_ ABSL_GUARDED_BY(mu_);
  absl::Time last_ ABSL_GUARDED_BY(mu_);
};

// The longest delay of all its limiters; NumRequeues is their maximum; Forget forgets in all.
class MaxOfRateLimiter final : public RateLimiter {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters);

  absl::Duration When(const std::string& item) override;
  void Forget(const std::string& item) override;
  int NumRequeues(const std::string& item) const override;

 private:
  const std::vector<std::unique_ptr<RateLimiter>> limiters_;
};

inline constexpr absl::Duration kDefaultItemBaseDelay = absl::Milliseconds(5);
inline constexpr absl::Duration kDefaultItemMaxDelay = absl::Seconds(1000);
inline constexpr double kDefaultBucketQps = 10;
inline constexpr int kDefaultBucketBurst = 100;

// client-go's DefaultControllerRateLimiter.
std::unique_ptr<RateLimiter> DefaultControllerRateLimiter(
    std::shared_ptr<const WorkQueueClock> clock = RealWorkQueueClock::Shared());

}  // namespace tj::kube
