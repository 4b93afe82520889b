#include "coordinator/cluster/per_worker_resources.h"

namespace tj {

std::shared_ptr<RemoteValueState> ResourceSpec::ValueFor(int worker_index) {
  absl::MutexLock lock(&mu_);
  auto& value = per_worker_[worker_index];
  if (value == nullptr) value = std::make_shared<RemoteValueState>();
  return value;
}

std::map<int, RemoteValue> ResourceSpec::values() const {
  absl::MutexLock lock(&mu_);
  std::map<int, RemoteValue> out;
  for (const auto& [index, state] : per_worker_) out.emplace(index, RemoteValue(state));
  return out;
}

std::shared_ptr<ResourceSpec> ResourceRegistry::Add(std::string function,
                                                    std::string serialized_args) {
  auto spec = std::make_shared<ResourceSpec>();
  spec->function = std::move(function);
  spec->serialized_args = std::move(serialized_args);
  absl::MutexLock lock(&mu_);
  spec->id = next_id_++;
  specs_.push_back(spec);
  return spec;
}

std::vector<std::shared_ptr<ResourceSpec>> ResourceRegistry::specs() const {
  absl::MutexLock lock(&mu_);
  return specs_;
}

uint64_t ResourceRegistry::version() const {
  absl::MutexLock lock(&mu_);
  return specs_.size();
}

}  // namespace tj
