#include "operator/kube/rate_limiter.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

namespace tj::kube {

ItemExponentialFailureRateLimiter::ItemExponentialFailureRateLimiter(absl::Duration base_delay,
                                                                     absl::Duration max_delay)
    : base_delay_(base_delay), max_delay_(max_delay) {}

absl::Duration ItemExponentialFailureRateLimiter::When(const std::string& item) {
  int exponent;
  {
    StdMutexLock guard(mu_);
    int& failures = failures_[item];
    exponent = failures;
    if (failures < std::numeric_limits<int>::max()) ++failures;
  }
  // As client-go: computed in floating point so a large exponent cannot overflow; anything beyond
  // the range of a duration, or above the cap, is the cap.
  const double nanos = absl::ToDoubleNanoseconds(base_delay_) * std::ldexp(1.0, exponent);
  if (!(nanos < static_cast<double>(std::numeric_limits<int64_t>::max()))) return max_delay_;
  return std::min(absl::Nanoseconds(static_cast<int64_t>(nanos)), max_delay_);
}

void ItemExponentialFailureRateLimiter::Forget(const std::string& item) {
  StdMutexLock guard(mu_);
  failures_.erase(item);
}

int ItemExponentialFailureRateLimiter::NumRequeues(const std::string& item) const {
  StdMutexLock guard(mu_);
  auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

BucketRateLimiter::BucketRateLimiter(double qps, int burst,
                                     std::shared_ptr<const WorkQueueClock> clock)
    : qps_(qps), burst_(burst), clock_(std::move(clock)), tokens_(burst), last_(clock_->Now()) {}

absl::Duration BucketRateLimiter::When(const std::string& item) {
  StdMutexLock guard(mu_);
  const absl::Time now = clock_->Now();
  // Refill for the time since the last reservation (a clock that went back refills nothing).
  if (now > last_) {
    tokens_ = std::min(burst_, tokens_ + absl::ToDoubleSeconds(now - last_) * qps_);
    last_ = now;
  }
  tokens_ -= 1;
  if (tokens_ >= 0) return absl::ZeroDuration();
  if (qps_ <= 0) return absl::InfiniteDuration();
  // Truncated to whole nanoseconds, as time.Duration(float64(time.Second) * seconds) does.
  return absl::Nanoseconds(static_cast<int64_t>(-tokens_ / qps_ * 1e9));
}

MaxOfRateLimiter::MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters)
    : limiters_(std::move(limiters)) {}

absl::Duration MaxOfRateLimiter::When(const std::string& item) {
  absl::Duration longest = absl::ZeroDuration();
  for (const auto& limiter : limiters_) longest = std::max(longest, limiter->When(item));
  return longest;
}

void MaxOfRateLimiter::Forget(const std::string& item) {
  for (const auto& limiter : limiters_) limiter->Forget(item);
}

int MaxOfRateLimiter::NumRequeues(const std::string& item) const {
  int most = 0;
  for (const auto& limiter : limiters_) most = std::max(most, limiter->NumRequeues(item));
  return most;
}

std::unique_ptr<RateLimiter> DefaultControllerRateLimiter(
    std::shared_ptr<const WorkQueueClock> clock) {
  std::vector<std::unique_ptr<RateLimiter>> limiters;
  limiters.push_back(std::make_unique<ItemExponentialFailureRateLimiter>(kDefaultItemBaseDelay,
                                                                         kDefaultItemMaxDelay));
  limiters.push_back(std::make_unique<BucketRateLimiter>(kDefaultBucketQps, kDefaultBucketBurst,
                                                         std::move(clock)));
  return std::make_unique<MaxOfRateLimiter>(std::move(limiters));
}

}  // namespace tj::kube
