#include "coordinator/metrics/task_metrics_endpoint.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

namespace tj {

std::unique_ptr<MetricsHttpServer> ServeTaskMetricsFromEnvironment(const MetricsRegistry& registry,
                                                                   const std::string& who) {
  const char* address = std::getenv("TJ_METRICS_ADDRESS");
  if (address == nullptr || *address == '\0') return nullptr;
  auto started = MetricsHttpServer::Start(address, &registry);
  if (!started.ok()) {
    spdlog::warn("{}: no /metrics: TJ_METRICS_ADDRESS {}: {}", who, address,
                 started.status().ToString());
    return nullptr;
  }
  spdlog::info("{}: Prometheus metrics on port {} (GET /metrics)", who, (*started)->port());
  return *std::move(started);
}

}  // namespace tj
