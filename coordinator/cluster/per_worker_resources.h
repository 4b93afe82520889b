// Per-worker resources on the coordinator side: the specs of every resource created with
// CreatePerWorkerResource (function, arguments), and for each worker the RemoteValue describing its
// instance. Workers that join later or come back from a failure build every spec before taking work.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/closure/remote_value.h"

namespace tj {

struct ResourceSpec {
  uint64_t id = 0;
  std::string function;
  std::string serialized_args;

  // The RemoteValue of worker `worker_index`'s instance, created on first use.
  std::shared_ptr<RemoteValueState> ValueFor(int worker_index);
  std::map<int, RemoteValue> values() const;

 private:
  mutable absl::Mutex mu_;
  std::map<int, std::shared_ptr<RemoteValueState>> per_worker_ ABSL_GUARDED_BY(mu_);
};

// One value per worker (TensorFlow's PerWorkerValues). Passed to Schedule, each worker receives its
// own instance.
class PerWorkerValues {
 public:
  explicit PerWorkerValues(std::shared_ptr<ResourceSpec> spec) : spec_(std::move(spec)) {}
  uint64_t resource_id() const { return spec_->id; }
  // Worker index -> RemoteValue of that worker's instance.
  std::map<int, RemoteValue> values() const { return spec_->values(); }

 private:
  std::shared_ptr<ResourceSpec> spec_;
};

class ResourceRegistry {
 public:
  std::shared_ptr<ResourceSpec> Add(std::string function, std::string serialized_args);
  // Specs in creation order; `version` changes whenever a spec is added.
  std::vector<std::shared_ptr<ResourceSpec>> specs() const;
  uint64_t version() const;

 private:
  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<ResourceSpec>> specs_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace tj
