// A per-worker resource (a dataset iterator, a cache, a counter): built on each worker by a registered
// resource function, passed to functions by reference, rebuilt when its worker restarts.
#pragma once

#include <string>

#include "tj/v1/value.pb.h"

namespace tj {

class Resource {
 public:
  virtual ~Resource() = default;
  // For error messages.
  virtual std::string type_name() const = 0;
  // What CreatePerWorkerResource's RemoteValue holds for this worker.
  virtual v1::Value Describe() const { return v1::Value(); }
};

}  // namespace tj
