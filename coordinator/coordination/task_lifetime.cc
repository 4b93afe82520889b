#include "coordinator/coordination/task_lifetime.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "coordinator/base/job_token.h"
#include "coordinator/base/shutdown_signals.h"
#include "coordinator/coordination/coordination_client.h"

namespace tj {
namespace {

// A signal already pending, without waiting.
std::optional<int> PendingSignal(const sigset_t& signals) {
  const timespec no_wait{0, 0};
  const int signal_number = sigtimedwait(&signals, nullptr, &no_wait);
  if (signal_number > 0) return signal_number;
  return std::nullopt;
}

// After the first signal: tell the coordinator, then serve while it answers.
void LingerForCoordinator(const TaskLifetime& lifetime, const sigset_t& signals,
                          const std::string& signal_name) {
  const v1::TaskId self = MakeTaskId(lifetime.task_type, lifetime.task);
  CoordinationClient coordinator(lifetime.coordinator_address, absl::Seconds(2));
  auto notice = coordinator.SendPreemptionNotice(self, signal_name, absl::InfiniteFuture());
  if (!notice.ok()) {
    spdlog::info("{}: {} task {}: the coordinator does not answer ({}): stopping now",
                 lifetime.program, lifetime.task_type, lifetime.task, notice.status().ToString());
    return;
  }
  spdlog::info(
      "{}: {} task {}: serving until the coordinator at {} is done (at most {}); it says: {}",
      lifetime.program, lifetime.task_type, lifetime.task, lifetime.coordinator_address,
      absl::FormatDuration(lifetime.max_linger), notice->decision());
  const absl::Time give_up = absl::Now() + lifetime.max_linger;
  // A wait held open on the coordinator (a key nobody sets) ends with an error the moment that
  // process goes, even if a restarted coordinator is listening on the same address a moment
  // later: polling could mistake the successor for it and keep this PS serving a new coordinator
  // that would restore onto it and then lose it.
  const std::string never_set = absl::StrCat("tj/linger/", lifetime.task_type, "/", lifetime.task);
  while (absl::Now() < give_up) {
    const timespec no_wait{0, 0};
    if (const int again = sigtimedwait(&signals, nullptr, &no_wait); again > 0) {
      spdlog::info("{}: {} task {}: SIG{} again: stopping now", lifetime.program,
                   lifetime.task_type, lifetime.task, sigabbrev_np(again));
      return;
    }
    absl::StatusOr<std::string> held = coordinator.Get(never_set, lifetime.linger_poll);
    // The coordinator's own "not set within" answer: it is still there.
    if (absl::IsDeadlineExceeded(held.status()) &&
        absl::StrContains(held.status().message(), "was not set within")) {
      continue;
    }
    spdlog::info("{}: {} task {}: the coordinator is done ({}): stopping", lifetime.program,
                 lifetime.task_type, lifetime.task, held.status().ToString());
    return;
  }
  spdlog::warn("{}: {} task {}: the coordinator still answers after {}: stopping anyway",
               lifetime.program, lifetime.task_type, lifetime.task,
               absl::FormatDuration(lifetime.max_linger));
}

}  // namespace

int ServeTaskUntilSignalled(const TaskLifetime& lifetime) {
  LogJobTokenMode(lifetime.program);
  std::optional<HeartbeatSender> heartbeats;
  if (!lifetime.coordinator_address.empty()) {
    heartbeats.emplace(lifetime.coordinator_address, MakeTaskId(lifetime.task_type, lifetime.task),
                       lifetime.incarnation, lifetime.address);
  }
  const sigset_t signals = ShutdownSignalSet();
  const int signal_number = WaitForSignal(signals);
  const std::string signal_name = std::string("SIG") + sigabbrev_np(signal_number);
  spdlog::info("{}: {} task {}: {}", lifetime.program, lifetime.task_type, lifetime.task,
               signal_name);
  if (lifetime.serve_until_coordinator_done && !lifetime.coordinator_address.empty() &&
      !PendingSignal(signals).has_value()) {
    LingerForCoordinator(lifetime, signals, signal_name);
  }
  spdlog::info("{}: {} task {}: shutting down", lifetime.program, lifetime.task_type,
               lifetime.task);
  return signal_number;
}

}  // namespace tj
