// ResourceTable: this worker's per-worker resources by id. A restarted worker starts empty; the
// coordinator notices the new incarnation and rebuilds every resource before sending work.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/worker/resource.h"

namespace tj {

class ResourceTable {
 public:
  void Put(uint64_t id, std::shared_ptr<Resource> resource) {
    absl::MutexLock lock(&mu_);
    resources_[id] = std::move(resource);
  }
  std::shared_ptr<Resource> Get(uint64_t id) const {
    absl::MutexLock lock(&mu_);
    auto it = resources_.find(id);
    return it == resources_.end() ? nullptr : it->second;
  }

 private:
  mutable absl::Mutex mu_;
  std::unordered_map<uint64_t, std::shared_ptr<Resource>> resources_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tj
