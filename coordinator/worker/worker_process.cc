#include "coordinator/worker/worker_process.h"

#include <spdlog/spdlog.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "coordinator/base/shutdown_signals.h"
#include "coordinator/base/strings.h"
#include "coordinator/coordination/task_lifetime.h"
#include "coordinator/metrics/task_metrics_endpoint.h"
#include "coordinator/resolver/tf_config_cluster_resolver.h"
#include "coordinator/worker/worker_server.h"

namespace tj {

absl::StatusOr<WorkerSettings> WorkerSettingsFromTfConfig() {
  auto resolver = TFConfigClusterResolver::FromEnvironment();
  if (!resolver.ok()) return resolver.status();
  if ((*resolver)->task_type().value_or("") != "worker" || !(*resolver)->task_id()) {
    return absl::InvalidArgumentError(
        Cat("TF_CONFIG: task must be {\"type\": \"worker\", \"index\": N} for a worker, got type '",
            (*resolver)->task_type().value_or("(none)"), "'"));
  }
  auto spec = (*resolver)->cluster_spec();
  if (!spec.ok()) return spec.status();
  const std::string chief = spec->num_tasks("chief") > 0 ? *spec->task_address("chief", 0) : "";
  WorkerSettings settings;
  settings.task = *(*resolver)->task_id();
  auto own = spec->task_address("worker", settings.task);
  if (!own.ok()) return own.status();
  settings.address = *own;
  settings.coordinator_address = chief;
  for (int i = 0; i < spec->num_tasks("ps"); ++i) {
    auto ps = spec->task_address("ps", i);
    if (!ps.ok()) return ps.status();
    settings.ps_addresses.push_back(*ps);
  }
  return settings;
}

int ServeWorkerUntilSignalled(const FunctionRegistry& registry, const WorkerSettings& settings,
                              const std::string& program) {
  const std::string listen = ListenAddressFor(settings.address);
  auto server =
      WorkerServer::Start(listen, &registry, WorkerIdentity{settings.task, settings.ps_addresses});
  if (!server.ok()) {
    spdlog::error("{}: worker task {} cannot serve on {}: {}", program, settings.task, listen,
                  server.status().ToString());
    return 1;
  }
  const std::string host = listen.substr(0, listen.rfind(':'));
  std::printf("LISTENING %s:%d\n", host.c_str(), (*server)->port());
  std::fflush(stdout);
  spdlog::info("{}: worker task {} serving on {}:{} (incarnation {:x}), {} parameter server(s)",
               program, settings.task, host, (*server)->port(), (*server)->incarnation(),
               settings.ps_addresses.size());
  // /metrics when TJ_METRICS_ADDRESS is set for this process.
  MetricsRegistry metrics;
  const WorkerCounters& counters = (*server)->counters();
  metrics.AddCollector([&metrics, &counters] {
    metrics.SetCounter("tj_worker_runs_total",
                       "Closures this worker process ran to an end (also counted by the "
                       "coordinator as tj_worker_closures_run_total)",
                       static_cast<double>(counters.runs.load(std::memory_order_relaxed)));
    metrics.SetCounter("tj_worker_run_errors_total",
                       "Of those, the ones that ended in an application or PS error",
                       static_cast<double>(counters.run_errors.load(std::memory_order_relaxed)));
  });
  std::unique_ptr<MetricsHttpServer> metrics_server = ServeTaskMetricsFromEnvironment(
      metrics, absl::StrCat(program, ": worker task ", settings.task));
  TaskLifetime lifetime;
  lifetime.program = program;
  lifetime.task_type = "worker";
  lifetime.task = settings.task;
  lifetime.incarnation = (*server)->incarnation();
  // A port chosen at start (":0") is told as the one bound.
  lifetime.address = settings.address.ends_with(":0") ? absl::StrCat(host, ":", (*server)->port())
                                                      : settings.address;
  lifetime.coordinator_address = settings.coordinator_address;
  ServeTaskUntilSignalled(lifetime);
  metrics_server.reset();  // no scrape of a server going away
  metrics.RemoveCollectors();
  (*server)->Shutdown(absl::Seconds(2));
  (*server)->Wait();
  return 0;
}

}  // namespace tj
