#include "coordinator/coordination/task_lifetime.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <optional>

#include "coordinator/base/job_token.h"
#include "coordinator/base/shutdown_signals.h"
#include "coordinator/coordination/coordination_client.h"

namespace tj {

int ServeTaskUntilSignalled(const std::string& program, const std::string& task_type, int task,
                            uint64_t incarnation, const std::string& coordinator_address) {
  LogJobTokenMode(program);
  std::optional<HeartbeatSender> heartbeats;
  if (!coordinator_address.empty()) {
    heartbeats.emplace(coordinator_address, MakeTaskId(task_type, task), incarnation);
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  const int signal_number = WaitForSignal(signals);
  spdlog::info("{}: {} task {}: SIG{}, shutting down", program, task_type, task,
               sigabbrev_np(signal_number));
  return signal_number;
}

}  // namespace tj
