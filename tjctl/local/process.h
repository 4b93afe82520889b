// ChildProcess: one local process of a job (a worker, a PS, a coordinator) started by tjctl or a test.
// It runs in its own process group (terminal signals reach tjctl, which stops children in order) and
// dies with the thread that started it (PR_SET_PDEATHSIG), so no child outlives tjctl, even a crashed
// one. Exits are waited for through a pidfd, without polling.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tj::local {

struct ProcessSpec {
  std::string binary;
  std::vector<std::string> args;
  std::map<std::string, std::string> env;  // added to (or replacing in) the parent's environment
  // stdout and stderr are appended here; empty: stdout is a pipe the parent reads (for the LISTENING
  // line) and stderr is inherited.
  std::string log_path;
  // Names removed from the inherited environment before `env` is applied (variables of the job
  // contract that must not leak from tjctl's own environment).
  std::vector<std::string> unset_env;
};

// How a process ended, Kubernetes style: a signal becomes exit code 128 + signal (137 for SIGKILL).
struct ProcessExit {
  int exit_code = 0;
  int signal = 0;  // 0 if it exited normally
};
ProcessExit DecodeWaitStatus(int wait_status);

class ChildProcess {
 public:
  static absl::StatusOr<ChildProcess> Start(const ProcessSpec& spec);
  // Starts `binary` with `args` and extra environment; waits (up to `timeout`) for its LISTENING line.
  static absl::StatusOr<ChildProcess> StartAndWaitListening(
      const std::string& binary, const std::vector<std::string>& args,
      const std::map<std::string, std::string>& env = {}, absl::Duration timeout = absl::Seconds(30));

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ~ChildProcess();  // SIGKILLs and reaps a process still running

  const std::string& address() const { return address_; }
  pid_t pid() const { return pid_; }
  // A file descriptor that becomes readable when the process exits (for poll over many processes).
  int exit_fd() const { return pidfd_; }
  bool running() const { return pid_ > 0; }

  // Reaps the process if it has exited within `timeout` (zero: just check).
  std::optional<ProcessExit> WaitForExit(absl::Duration timeout);
  // Sends `signal` to the process group and waits for the exit.
  ProcessExit KillAndWait(int signal);
  // SIGTERM to the process group, up to `grace` to exit, then SIGKILL.
  ProcessExit Terminate(absl::Duration grace);

 private:
  ChildProcess() = default;
  absl::Status ReadListeningLine(absl::Duration timeout);

  pid_t pid_ = -1;
  int pidfd_ = -1;
  int stdout_fd_ = -1;
  std::string address_;
  std::string binary_;
};

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0 and closed).
int PickFreePort();

}  // namespace tj::local
