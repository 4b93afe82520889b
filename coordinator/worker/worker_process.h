// A worker process's life: where it listens and which parameter servers it uses (from TF_CONFIG or
// given), serving registered functions until SIGTERM or SIGINT. tj-worker, tj-train and programs
// built on the SDK all run their worker role through this.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/worker/function_registry.h"

namespace tj {

struct WorkerSettings {
  std::string address;  // what peers dial; ListenAddressFor() says what is bound
  // The coordinator ("chief") to register with and heartbeat to, for its task states; empty: none.
  std::string coordinator_address;
  int task = 0;
  std::vector<std::string> ps_addresses;
};

// From TF_CONFIG, whose task must be {"type": "worker", "index": N}. Errors name what is wrong.
absl::StatusOr<WorkerSettings> WorkerSettingsFromTfConfig();

// Serves until SIGTERM or SIGINT (which the caller blocked with BlockShutdownSignals() before any
// thread started), printing "LISTENING host:port" on stdout once serving. Returns the exit code.
int ServeWorkerUntilSignalled(const FunctionRegistry& registry, const WorkerSettings& settings,
                              const std::string& program);

}  // namespace tj
