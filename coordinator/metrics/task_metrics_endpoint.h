// The /metrics endpoint of a PS or worker process: opened only when TJ_METRICS_ADDRESS is set for
// that process (in Kubernetes each pod has its own address; in a local run, give it to one process
// at a time). A task serves training: an address it cannot bind costs its metrics (a warning),
// not the task.
#pragma once

#include <memory>
#include <string>

#include "coordinator/metrics/metrics_http_server.h"
#include "coordinator/metrics/metrics_registry.h"

namespace tj {

// Null when TJ_METRICS_ADDRESS is unset or empty, or cannot be served (logged, naming `who`).
std::unique_ptr<MetricsHttpServer> ServeTaskMetricsFromEnvironment(const MetricsRegistry& registry,
                                                                   const std::string& who);

}  // namespace tj
