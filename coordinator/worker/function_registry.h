// FunctionRegistry: the functions a worker can run, by name. The coordinator schedules by name because
// code cannot travel between C++ processes; every worker binary registers the same set at start-up.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/worker/args.h"
#include "coordinator/worker/function_context.h"
#include "coordinator/worker/resource.h"
#include "tj/v1/value.pb.h"

namespace tj {

using WorkerFunction = std::function<absl::StatusOr<v1::Value>(FunctionContext&, const Args&)>;
using ResourceFunction =
    std::function<absl::StatusOr<std::shared_ptr<Resource>>(FunctionContext&, const Args&)>;

class FunctionRegistry {
 public:
  // Registering a name twice is a programming error: returns AlreadyExists.
  absl::Status Register(std::string name, WorkerFunction fn);
  absl::Status RegisterResource(std::string name, ResourceFunction fn);

  // NotFound naming the function and listing what is registered.
  absl::StatusOr<const WorkerFunction*> Find(const std::string& name) const;
  absl::StatusOr<const ResourceFunction*> FindResource(const std::string& name) const;

  std::vector<std::string> function_names() const;
  std::vector<std::string> resource_function_names() const;

 private:
  std::map<std::string, WorkerFunction> functions_;
  std::map<std::string, ResourceFunction> resource_functions_;
};

}  // namespace tj
