// tj-ps: runs one parameter-server task until SIGTERM or SIGINT. Prints "LISTENING host:port" on
// stdout once it accepts connections (the only thing it writes there; logs go to stderr). The
// address and task come from flags or, when TF_CONFIG names a ps task, from there.
#include <cstdlib>
#include <string>

#include "CLI/CLI.hpp"
#include "coordinator/base/malloc_tuning.h"
#include "coordinator/base/shutdown_signals.h"
#include "coordinator/ps/ps_process.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

int main(int argc, char** argv) {
  // Block the shutdown signals before gRPC starts any thread, so that every thread inherits the
  // mask and the signals are only ever taken by WaitForSignal, in ordinary (not handler) context.
  tj::BlockShutdownSignals();
  tj::TuneMallocForLargeTensors();
  CLI::App app{"tj-ps: one parameter-server task of a training job"};
  std::string address;
  int task = -1;
  app.add_option("--address", address,
                 "host:port to listen on; port 0 picks a free one (default: from TF_CONFIG, else "
                 "127.0.0.1:0)");
  app.add_option("--task", task, "index of this task in /job:ps (default: from TF_CONFIG, else 0)")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  spdlog::set_default_logger(spdlog::stderr_color_mt("tj-ps"));

  tj::PsSettings settings;
  settings.address = "127.0.0.1:0";
  if (std::getenv("TF_CONFIG") != nullptr && (address.empty() || task < 0)) {
    auto from_env = tj::PsSettingsFromTfConfig();
    if (!from_env.ok()) {
      spdlog::error("tj-ps: {}", from_env.status().ToString());
      return 2;
    }
    settings = *from_env;
  }
  if (!address.empty()) settings.address = address;
  if (task >= 0) settings.task = task;
  return tj::ServePsUntilSignalled(settings, "tj-ps");
}
