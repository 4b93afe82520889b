#include "operator/controller/expectations.h"
#include "coordinator/base/std_mutex.h"

namespace tj::op {

void CreationExpectations::Expect(const std::string& key, const std::vector<std::string>& objects,
                                  absl::Time now) {
  StdMutexLock lock(mu_);
  if (objects.empty()) {
    jobs_.erase(key);
    return;
  }
  Entry& entry = jobs_[key];
  entry.objects = std::set<std::string>(objects.begin(), objects.end());
  entry.since = now;
}

Observation CreationExpectations::Observed(const std::string& key, const std::string& object) {
  StdMutexLock lock(mu_);
  auto it = jobs_.find(key);
  if (it == jobs_.end() || it->second.objects.erase(object) == 0) return Observation::kNotAwaited;
  if (!it->second.objects.empty()) return Observation::kAwaiting;
  jobs_.erase(it);
  return Observation::kSatisfied;
}

bool CreationExpectations::Satisfied(const std::string& key, absl::Time now) const {
  StdMutexLock lock(mu_);
  auto it = jobs_.find(key);
  return it == jobs_.end() || now - it->second.since > ttl_;
}

std::optional<absl::Time> CreationExpectations::ExpiresAt(const std::string& key) const {
  StdMutexLock lock(mu_);
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return std::nullopt;
  return it->second.since + ttl_;
}

std::vector<std::string> CreationExpectations::Pending(const std::string& key) const {
  StdMutexLock lock(mu_);
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return {};
  return std::vector<std::string>(it->second.objects.begin(), it->second.objects.end());
}

void CreationExpectations::Forget(const std::string& key) {
  StdMutexLock lock(mu_);
  jobs_.erase(key);
}

}  // namespace tj::op
