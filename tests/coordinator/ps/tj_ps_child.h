// A tj-ps child process for the tests of the real binary (TJ_PS_BINARY): its stdout on a pipe,
// killed and reaped on destruction; starting one with an environment variable set; and a field of
// its /proc status (its peak memory).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/ps/ps_client.h"

#ifndef TJ_PS_BINARY
#error "TJ_PS_BINARY must name the tj-ps executable"
#endif

namespace tj::testing {

inline constexpr int kStartupTimeoutMs = 30'000;

// A child process with its stdout on a pipe. Killed and reaped on destruction if the test did not
// wait for it, so that a failing test leaves no stray server behind.
class ChildProcess {
 public:
  static std::optional<ChildProcess> Spawn(std::vector<std::string> args) {
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) return std::nullopt;
    // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) return std::nullopt;
    if (pid == 0) {
      if (dup2(out[1], STDOUT_FILENO) < 0) _exit(126);
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the test
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    return ChildProcess(pid, out[0]);
  }

  ChildProcess(ChildProcess&& other) noexcept
      : pid_(std::exchange(other.pid_, -1)), stdout_(std::exchange(other.stdout_, -1)) {}
  ChildProcess& operator=(ChildProcess&&) = delete;
  ~ChildProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (stdout_ >= 0) close(stdout_);
  }

  // The next line of the child's stdout without its newline; nullopt on EOF or after `timeout_ms`.
  std::optional<std::string> ReadLine(int timeout_ms) {
    std::string line;
    while (true) {
      pollfd pfd{stdout_, POLLIN, 0};
      const int ready = poll(&pfd, 1, timeout_ms);
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0) return std::nullopt;
      char c;
      const ssize_t n = read(stdout_, &c, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return std::nullopt;
      if (c == '\n') return line;
      line.push_back(c);
    }
  }

  bool Signal(int signal_number) { return kill(pid_, signal_number) == 0; }
  pid_t pid() const { return pid_; }

  // The raw wait status once the child exits; nullopt if it is still running after `timeout_ms`.
  std::optional<int> WaitForExit(int timeout_ms) {
    // A pidfd becomes readable when the process exits: a deadline without polling waitpid in a
    // loop.
    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
    if (pidfd >= 0) {
      pollfd pfd{pidfd, POLLIN, 0};
      int ready;
      do {
        ready = poll(&pfd, 1, timeout_ms);
      } while (ready < 0 && errno == EINTR);
      close(pidfd);
      if (ready == 0) return std::nullopt;
    }
    int status = 0;
    if (waitpid(pid_, &status, 0) != pid_) return std::nullopt;
    pid_ = -1;
    return status;
  }

 private:
  ChildProcess(pid_t pid, int stdout_fd) : pid_(pid), stdout_(stdout_fd) {}

  pid_t pid_;
  int stdout_;
};

// A field of /proc/<pid>/status in bytes ("VmRSS", "VmHWM"); -1 if it cannot be read.
inline int64_t ProcStatusBytes(pid_t pid, const std::string& field) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field + ":", 0) != 0) continue;
    return std::strtoll(line.c_str() + field.size() + 1, nullptr, 10) * 1024;
  }
  return -1;
}

// Starts tj-ps as task 0 with the environment variable `name` set to `value` and connects to it.
inline void StartPsWithEnvironment(const char* name, const char* value,
                            std::optional<ChildProcess>& child, std::shared_ptr<PsClient>& client) {
  setenv(name, value, 1);
  std::optional<ChildProcess> spawned =
      ChildProcess::Spawn({TJ_PS_BINARY, "--task", "0", "--address", "127.0.0.1:0"});
  unsetenv(name);
  ASSERT_TRUE(spawned.has_value()) << "cannot start " << TJ_PS_BINARY;
  child.emplace(std::move(*spawned));
  const std::optional<std::string> line = child->ReadLine(kStartupTimeoutMs);
  ASSERT_TRUE(line.has_value()) << "tj-ps printed no LISTENING line";
  client = PsClient::Connect(line->substr(std::string("LISTENING ").size()), 0);
}

}  // namespace tj::testing
