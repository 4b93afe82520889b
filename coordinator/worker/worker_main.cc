// tj-worker: a worker process serving the built-in functions. Its address and the parameter servers
// come from TF_CONFIG (task type "worker") or from flags. Prints "LISTENING <host:port>" once
// serving.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/base/malloc_tuning.h"
#include "coordinator/base/shutdown_signals.h"
#include "coordinator/worker/builtin_functions.h"
#include "coordinator/worker/worker_process.h"

int main(int argc, char** argv) {
  // Signals are taken by WaitForSignal, so block them before gRPC starts its threads.
  tj::BlockShutdownSignals();
  tj::TuneMallocForLargeTensors();
  CLI::App app{"tj-worker: serves registered functions to a coordinator"};
  std::string address;
  int task = -1;
  std::string ps_list;
  app.add_option("--address", address, "host:port to listen on (default: from TF_CONFIG)");
  app.add_option("--task", task, "worker task index (default: from TF_CONFIG)");
  app.add_option("--ps", ps_list, "comma-separated parameter server addresses");
  CLI11_PARSE(app, argc, argv);
  // Debian's Abseil runs its deadlock detector on every lock; it costs 20-30% of dispatch
  // throughput (bench/). Tests keep it on.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // stdout carries only the LISTENING line; logs go to stderr.
  spdlog::set_default_logger(spdlog::stderr_color_mt("tj-worker"));

  tj::WorkerSettings settings;
  if (std::getenv("TF_CONFIG") != nullptr && (address.empty() || task < 0)) {
    auto from_env = tj::WorkerSettingsFromTfConfig();
    if (!from_env.ok()) {
      spdlog::error("tj-worker: {}", from_env.status().ToString());
      return 2;
    }
    settings = *std::move(from_env);
  }
  if (!address.empty()) settings.address = address;
  if (settings.address.empty()) settings.address = "127.0.0.1:0";
  if (task >= 0) settings.task = task;
  if (!ps_list.empty()) settings.ps_addresses = absl::StrSplit(ps_list, ',', absl::SkipEmpty());

  tj::FunctionRegistry registry;
  if (auto status = tj::RegisterBuiltinFunctions(registry); !status.ok()) {
    spdlog::error("tj-worker: {}", status.ToString());
    return 1;
  }
  return tj::ServeWorkerUntilSignalled(registry, settings, "tj-worker");
}
