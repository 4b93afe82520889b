// ClosureRunner: runs one RunRequest against the registry and the worker's resources, and says how it
// ended in the terms the coordinator acts on (FailureKind): a value, an application error, an
// unreachable parameter server, a cancellation, or a resource this worker no longer has.
#pragma once

#include <atomic>
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

// Closures a worker process ran to an end (its function returned or threw) and, of those, the ones
// that ended in an application or PS error (not a cancellation): its /metrics
// (tj_worker_runs_total, tj_worker_run_errors_total). Relaxed adds, one per closure.
struct WorkerCounters {
  std::atomic<int64_t> runs{0};
  std::atomic<int64_t> run_errors{0};
};

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

  const WorkerCounters& counters() const { return counters_; }

 private:
  // Decodes serialized arguments and looks up the resources they reference.
  absl::StatusOr<Args> DecodeArgs(const std::string& function, const std::string& serialized,
                                  bool* resource_missing) const;

  const FunctionRegistry* registry_;
  ResourceTable* resources_;
  const PsClients* ps_;
  int worker_index_;
  mutable WorkerCounters counters_;  // counted by Run, which is const (it runs concurrently)
};

}  // namespace tj
