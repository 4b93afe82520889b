// ChildProcess: a local process of a job (a worker, a PS) started by tjctl or a test: fork/exec with
// extra environment, its stdout "LISTENING host:port" line read to know when it serves, real signals to
// stop it.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tj::local {

class ChildProcess {
 public:
  // Starts `binary` with `args` and extra environment; waits (up to `timeout`) for its LISTENING line.
  static absl::StatusOr<ChildProcess> StartAndWaitListening(
      const std::string& binary, const std::vector<std::string>& args,
      const std::map<std::string, std::string>& env = {}, absl::Duration timeout = absl::Seconds(30));

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ~ChildProcess();  // SIGKILLs and reaps a process still running

  const std::string& address() const { return address_; }
  pid_t pid() const { return pid_; }
  // Sends `signal` and waits for the exit; returns the wait status.
  int KillAndWait(int signal);
  // Sends SIGTERM, waits up to `grace`, then SIGKILL; returns the wait status.
  int Terminate(absl::Duration grace);
  bool running() const { return pid_ > 0; }

 private:
  ChildProcess() = default;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string address_;
};

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0 and closed).
int PickFreePort();

}  // namespace tj::local
