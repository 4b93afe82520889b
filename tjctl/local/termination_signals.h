// TerminationSignals: SIGINT, SIGTERM and SIGHUP blocked and read from a signalfd, so `tjctl run`
// handles them in its loop (stop every replica, then exit 128+N) instead of dying at once. Create
// it before any thread or child process: children unblock signals themselves (ChildProcess).
#pragma once

#include <signal.h>

#include <optional>

#include "absl/status/statusor.h"

namespace tj::local {

class TerminationSignals {
 public:
  static absl::StatusOr<TerminationSignals> Block();
  TerminationSignals(TerminationSignals&& other) noexcept;
  TerminationSignals& operator=(TerminationSignals&&) = delete;
  ~TerminationSignals();  // closes the signalfd and restores the previous signal mask

  // A signal received since the last call, without waiting.
  std::optional<int> Poll();
  int fd() const { return fd_; }

 private:
  TerminationSignals() = default;
  int fd_ = -1;
  sigset_t previous_{};
};

// "SIGINT", "SIGKILL", or "signal 40".
const char* SignalName(int signal);

}  // namespace tj::local
