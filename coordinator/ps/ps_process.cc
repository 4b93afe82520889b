#include "coordinator/ps/ps_process.h"

#include <spdlog/spdlog.h>

#include <cstring>
#include <iostream>

#include "coordinator/base/shutdown_signals.h"
#include "coordinator/base/strings.h"
#include "coordinator/coordination/task_lifetime.h"
#include "coordinator/metrics/task_metrics_endpoint.h"
#include "coordinator/ps/ps_metrics.h"
#include "coordinator/ps/ps_server.h"
#include "coordinator/resolver/tf_config_cluster_resolver.h"

namespace tj {

absl::StatusOr<PsSettings> PsSettingsFromTfConfig() {
  auto resolver = TFConfigClusterResolver::FromEnvironment();
  if (!resolver.ok()) return resolver.status();
  if ((*resolver)->task_type().value_or("") != "ps" || !(*resolver)->task_id()) {
    return absl::InvalidArgumentError(
        Cat("TF_CONFIG: task must be {\"type\": \"ps\", \"index\": N} for a parameter server, got "
            "type '",
            (*resolver)->task_type().value_or("(none)"), "'"));
  }
  auto spec = (*resolver)->cluster_spec();
  if (!spec.ok()) return spec.status();
  const std::string chief = spec->num_tasks("chief") > 0 ? *spec->task_address("chief", 0) : "";
  PsSettings settings;
  settings.task = *(*resolver)->task_id();
  auto own = spec->task_address("ps", settings.task);
  if (!own.ok()) return own.status();
  settings.address = *own;
  settings.coordinator_address = chief;
  return settings;
}

int ServePsUntilSignalled(const PsSettings& settings, const std::string& program) {
  auto server = PsServer::Start(ListenAddressFor(settings.address), settings.task);
  if (!server.ok()) {
    spdlog::error("{}: ps task {}: {}", program, settings.task, server.status().ToString());
    return 1;
  }
  std::cout << "LISTENING " << (*server)->address() << std::endl;
  spdlog::info("{}: ps task {} serving on {} (incarnation {:x})", program, settings.task,
               (*server)->address(), (*server)->incarnation());
  // /metrics when TJ_METRICS_ADDRESS is set for this process.
  MetricsRegistry metrics;
  CollectPsMetrics(**server, metrics);
  std::unique_ptr<MetricsHttpServer> metrics_server =
      ServeTaskMetricsFromEnvironment(metrics, Cat(program, ": ps task ", settings.task));
  TaskLifetime lifetime;
  lifetime.program = program;
  lifetime.task_type = "ps";
  lifetime.task = settings.task;
  lifetime.incarnation = (*server)->incarnation();
  lifetime.address = settings.address;
  lifetime.coordinator_address = settings.coordinator_address;
  // The variables live here: the coordinator checkpoints them before this process may go.
  lifetime.serve_until_coordinator_done = true;
  ServeTaskUntilSignalled(lifetime);
  metrics_server.reset();  // no scrape of a server going away
  metrics.RemoveCollectors();
  (*server)->Shutdown(absl::Seconds(5));
  (*server)->Wait();
  return 0;
}

}  // namespace tj
