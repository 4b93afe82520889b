// tj-ps: runs one parameter-server task until SIGTERM or SIGINT. Prints "LISTENING host:port" on
// stdout once it accepts connections (the only thing it writes there; logs go to stderr).
#include <pthread.h>
#include <signal.h>

#include <cstring>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "coordinator/ps/ps_server.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

int main(int argc, char** argv) {
  CLI::App app{"tj-ps: one parameter-server task of a training job"};
  std::string address = "127.0.0.1:0";
  int task = 0;
  app.add_option("--address", address, "host:port to listen on; port 0 picks a free one")
      ->capture_default_str();
  app.add_option("--task", task, "index of this task in /job:ps")
      ->required()
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);

  spdlog::set_default_logger(spdlog::stderr_color_mt("tj-ps"));

  // Block the shutdown signals before gRPC starts any thread, so that every thread inherits the
  // mask and the signals are only ever taken by sigwait below, in ordinary (not handler) context.
  sigset_t shutdown_signals;
  sigemptyset(&shutdown_signals);
  sigaddset(&shutdown_signals, SIGTERM);
  sigaddset(&shutdown_signals, SIGINT);
  if (int err = pthread_sigmask(SIG_BLOCK, &shutdown_signals, nullptr); err != 0) {
    spdlog::error("pthread_sigmask: {}", std::strerror(err));
    return 1;
  }

  absl::StatusOr<std::unique_ptr<tj::PsServer>> server = tj::PsServer::Start(address, task);
  if (!server.ok()) {
    spdlog::error("{}", server.status().ToString());
    return 1;
  }
  std::cout << "LISTENING " << (*server)->address() << std::endl;

  int signal_number = 0;
  if (int err = sigwait(&shutdown_signals, &signal_number); err != 0) {
    spdlog::error("sigwait: {}", std::strerror(err));
    return 1;
  }
  spdlog::info("received SIG{}; shutting down", sigabbrev_np(signal_number));
  (*server)->Shutdown(absl::Seconds(5));
  (*server)->Wait();
  return 0;
}
