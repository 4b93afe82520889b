// ClosureRunner: runs one RunRequest against the registry and the worker's resources, and says how it
// ended in the terms the coordinator acts on (FailureKind): a value, an application error, an
// unreachable parameter server, a cancellation, or a resource this worker no longer has.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/worker/function_context.h"
#include "coordinator/worker/function_registry.h"
#include "coordinator/worker/resource_table.h"
#include "tj/v1/worker.pb.h"

namespace tj {

class ClosureRunner {
 public:
  ClosureRunner(const FunctionRegistry* registry, ResourceTable* resources, const PsClients* ps,
                int worker_index)
      : registry_(registry), resources_(resources), ps_(ps), worker_index_(worker_index) {}

  // Never throws; an exception escaping a user function becomes an Internal application error.
  void Run(const v1::RunRequest& request, const CancellationFlag* cancellation,
           v1::RunResult* result) const;

  // Builds (or rebuilds) resource `id` with a registered resource function.
  absl::StatusOr<v1::Value> CreateResource(const v1::CreateResourceRequest& request) const;

 private:
  // Decodes serialized arguments and looks up the resources they reference.
  absl::StatusOr<Args> DecodeArgs(const std::string& function, const std::string& serialized,
                                  bool* resource_missing) const;

  const FunctionRegistry* registry_;
  ResourceTable* resources_;
  const PsClients* ps_;
  int worker_index_;
};

}  // namespace tj
