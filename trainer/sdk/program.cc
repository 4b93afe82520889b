#include "trainer/sdk/program.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "coordinator/base/shutdown_signals.h"
#include "coordinator/base/strings.h"
#include "coordinator/cluster/cluster_coordinator.h"
#include "coordinator/ps/ps_error.h"
#include "coordinator/ps/ps_process.h"
#include "coordinator/resolver/tf_config_cluster_resolver.h"
#include "coordinator/worker/builtin_functions.h"
#include "coordinator/worker/worker_process.h"

namespace tj::sdk {
namespace {

// Health of every PS task, waiting for each to come up until `timeout` has passed.
absl::Status WaitForParameterServers(const std::vector<std::shared_ptr<PsClient>>& ps,
                                     absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (const auto& client : ps) {
    auto health = client->WaitForHealth(std::max(deadline - absl::Now(), absl::Milliseconds(1)));
    if (!health.ok()) {
      if (PsTaskOf(health.status()).has_value()) {
        return PsUnavailableError(client->ps_task(), client->address(),
                                  Cat("not answering after ", absl::FormatDuration(timeout), ": ",
                                      health.status().message()));
      }
      return health.status();  // e.g. Unauthenticated: a PS of another job at that address
    }
    spdlog::info("parameter server task {} at {} is up ({} variables, {} tables)",
                 client->ps_task(), client->address(), health->num_variables(),
                 health->num_tables());
  }
  return absl::OkStatus();
}

int RunChief(const Program& program, const ClusterSpec& spec) {
  auto settings = JobSettingsFromEnvironment();
  if (!settings.ok()) {
    spdlog::error("{}: {}", program.name, settings.status().ToString());
    return kExitUsage;
  }
  // Without the preemption handler, a SIGTERM ends the coordinator at once; the job's policy
  // restarts it (143) and it resumes from its last checkpoint.
  std::thread([name = program.name] {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    const int signal_number = WaitForSignal(signals);
    spdlog::warn("{}: SIG{}: exiting; the job restarts the coordinator from its last checkpoint",
                 name, sigabbrev_np(signal_number));
    spdlog::default_logger()->flush();
    std::_Exit(128 + signal_number);
  }).detach();

  std::vector<std::string> ps_addresses;
  std::vector<std::shared_ptr<PsClient>> ps_clients;
  for (int i = 0; i < spec.num_tasks("ps"); ++i) {
    ps_addresses.push_back(*spec.task_address("ps", i));
    ps_clients.push_back(PsClient::Connect(ps_addresses.back(), i));
  }
  std::vector<std::string> workers;
  for (int i = 0; i < spec.num_tasks("worker"); ++i) workers.push_back(*spec.task_address("worker", i));
  if (workers.empty()) {
    spdlog::error("{}: TF_CONFIG has no \"worker\" tasks: the coordinator has nobody to run on",
                  program.name);
    return kExitUsage;
  }
  spdlog::info("{}: coordinator of job '{}': {} worker(s), {} parameter server(s)", program.name,
               settings->job_name, workers.size(), ps_addresses.size());
  if (absl::Status up = WaitForParameterServers(ps_clients, program.ps_startup_timeout);
      !up.ok()) {
    return ChiefExitCode(up, *settings, program.name);
  }
  CoordinatorOptions options;
  options.worker_recovery_timeout = settings->worker_recovery_timeout;
  options.transient_ps_failure_threshold = settings->transient_ps_failure_threshold;
  auto coordinator = ClusterCoordinator::Create(workers, options);
  if (!coordinator.ok()) {
    spdlog::error("{}: {}", program.name, coordinator.status().ToString());
    return kExitFailure;
  }
  ChiefContext context(*settings, *std::move(coordinator), ps_addresses, ps_clients);
  const absl::Status outcome = program.run_chief(context);
  context.progress().Report([&](v1alpha1::TrainingProgress& p) {
    if (!outcome.ok()) {
      p.state = "failed";
      p.message = std::string(outcome.message());
    }
  });
  return ChiefExitCode(outcome, *settings, program.name);
}

}  // namespace

int ChiefExitCode(const absl::Status& outcome, const JobSettings& settings,
                  const std::string& program) {
  if (outcome.ok()) {
    spdlog::info("{}: training finished", program);
    return 0;
  }
  if (std::optional<int> ps_task = PsTaskOf(outcome); ps_task.has_value()) {
    spdlog::error(
        "{}: lost parameter server task {}: {}. Exiting with the restart code {}: the job restarts "
        "the coordinator, which restores the last checkpoint",
        program, *ps_task, outcome.ToString(), settings.restart_exit_code);
    return settings.restart_exit_code;
  }
  spdlog::error("{}: {}", program, outcome.ToString());
  return kExitFailure;
}

int RunProgram(const Program& program) {
  auto resolver = TFConfigClusterResolver::FromEnvironment();
  if (!resolver.ok()) {
    spdlog::error("{}: {}", program.name, resolver.status().ToString());
    return kExitUsage;
  }
  const std::string type = (*resolver)->task_type().value_or("");
  if (type == "ps") {
    auto settings = PsSettingsFromTfConfig();
    if (!settings.ok()) {
      spdlog::error("{}: {}", program.name, settings.status().ToString());
      return kExitUsage;
    }
    return ServePsUntilSignalled(*settings, program.name);
  }
  if (type == "worker") {
    auto settings = WorkerSettingsFromTfConfig();
    if (!settings.ok()) {
      spdlog::error("{}: {}", program.name, settings.status().ToString());
      return kExitUsage;
    }
    FunctionRegistry registry;
    absl::Status registered = RegisterBuiltinFunctions(registry);
    if (registered.ok() && program.register_functions) {
      registered = program.register_functions(registry);
    }
    if (!registered.ok()) {
      spdlog::error("{}: {}", program.name, registered.ToString());
      return kExitFailure;
    }
    return ServeWorkerUntilSignalled(registry, *settings, program.name);
  }
  if (type == "chief") {
    auto spec = (*resolver)->cluster_spec();
    if (!spec.ok()) {
      spdlog::error("{}: {}", program.name, spec.status().ToString());
      return kExitUsage;
    }
    return RunChief(program, *spec);
  }
  spdlog::error(
      "{}: TF_CONFIG task type '{}' is not one this program plays: \"chief\" (the coordinator), "
      "\"ps\" or \"worker\"",
      program.name, type.empty() ? "(none)" : type);
  return kExitUsage;
}

}  // namespace tj::sdk
