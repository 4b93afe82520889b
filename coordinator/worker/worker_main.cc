// tj-worker: a worker process serving the built-in functions. Its address and the parameter servers
// come from TF_CONFIG (task type "worker") or from flags. Prints "LISTENING <host:port>" once serving.
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>

#include "absl/synchronization/mutex.h"
#include <cstdio>
#include <thread>

#include "absl/strings/str_split.h"
#include "coordinator/resolver/tf_config_cluster_resolver.h"
#include "coordinator/worker/builtin_functions.h"
#include "coordinator/worker/worker_server.h"

int main(int argc, char** argv) {
  CLI::App app{"tj-worker: serves registered functions to a coordinator"};
  std::string address;
  int task = -1;
  std::string ps_list;
  app.add_option("--address", address, "host:port to listen on (default: from TF_CONFIG)");
  app.add_option("--task", task, "worker task index (default: from TF_CONFIG)");
  app.add_option("--ps", ps_list, "comma-separated parameter server addresses");
  CLI11_PARSE(app, argc, argv);
  // Debian's Abseil runs its deadlock detector on every lock; it costs 20-30% of dispatch throughput
  // (bench/). Tests keep it on.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // stdout carries only the LISTENING line; logs go to stderr.
  spdlog::set_default_logger(spdlog::stderr_color_mt("tj-worker"));

  tj::WorkerIdentity identity;
  if (std::getenv("TF_CONFIG") != nullptr && (address.empty() || task < 0)) {
    auto resolver = tj::TFConfigClusterResolver::FromEnvironment();
    if (!resolver.ok()) {
      spdlog::error("tj-worker: {}", resolver.status().ToString());
      return 2;
    }
    if ((*resolver)->task_type().value_or("") != "worker" || !(*resolver)->task_id()) {
      spdlog::error("tj-worker: TF_CONFIG task must be {{\"type\": \"worker\", \"index\": N}}, got "
                    "type '{}'",
                    (*resolver)->task_type().value_or("(none)"));
      return 2;
    }
    auto spec = (*resolver)->cluster_spec();
    if (!spec.ok()) {
      spdlog::error("tj-worker: {}", spec.status().ToString());
      return 2;
    }
    task = *(*resolver)->task_id();
    auto own = spec->task_address("worker", task);
    if (!own.ok()) {
      spdlog::error("tj-worker: {}", own.status().ToString());
      return 2;
    }
    if (address.empty()) address = *own;
    for (int i = 0; i < spec->num_tasks("ps"); ++i) {
      identity.ps_addresses.push_back(*spec->task_address("ps", i));
    }
  }
  if (address.empty()) address = "127.0.0.1:0";
  if (task < 0) task = 0;
  identity.task_index = task;
  if (!ps_list.empty()) identity.ps_addresses = absl::StrSplit(ps_list, ',', absl::SkipEmpty());

  // Signals are taken by a dedicated thread, so block them before gRPC starts its threads.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  tj::FunctionRegistry registry;
  if (auto status = tj::RegisterBuiltinFunctions(registry); !status.ok()) {
    spdlog::error("tj-worker: {}", status.ToString());
    return 1;
  }
  auto server = tj::WorkerServer::Start(address, &registry, identity);
  if (!server.ok()) {
    spdlog::error("tj-worker: {}", server.status().ToString());
    return 1;
  }
  const std::string host = address.substr(0, address.rfind(':'));
  std::printf("LISTENING %s:%d\n", host.c_str(), (*server)->port());
  std::fflush(stdout);
  spdlog::info("worker task {} serving on {}:{} (incarnation {:x})", task, host, (*server)->port(),
               (*server)->incarnation());

  std::thread signal_waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info("worker task {}: signal {}, shutting down", task, sig);
    (*server)->Shutdown(absl::Seconds(2));
  });
  (*server)->Wait();
  signal_waiter.join();
  return 0;
}
