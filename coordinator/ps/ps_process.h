// A parameter-server process's life: its address and task index (from TF_CONFIG or given), serving
// until SIGTERM or SIGINT. tj-ps, tj-train and SDK programs run their PS role through this.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace tj {

struct PsSettings {
  std::string address;  // what peers dial; ListenAddressFor() says what is bound
  // The coordinator ("chief") to register with and heartbeat to, for its task states; empty: none.
  std::string coordinator_address;
  int task = 0;
};

// From TF_CONFIG, whose task must be {"type": "ps", "index": N}.
absl::StatusOr<PsSettings> PsSettingsFromTfConfig();

// Serves until SIGTERM or SIGINT (blocked by the caller with BlockShutdownSignals() before any
// thread started), printing "LISTENING host:port" on stdout once serving; after the signal, serves
// on until the coordinator has checkpointed and gone (coordination/task_lifetime.h). Returns the
// exit code.
int ServePsUntilSignalled(const PsSettings& settings, const std::string& program);

}  // namespace tj
