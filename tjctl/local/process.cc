#include "tjctl/local/process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace tj::local {
namespace {

int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

int RemainingMillis(absl::Time deadline) {
  const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
  return ms <= 0 ? 0 : static_cast<int>(std::min<int64_t>(ms, 1 << 30));
}

}  // namespace

ProcessExit DecodeWaitStatus(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    return {128 + WTERMSIG(wait_status), WTERMSIG(wait_status)};
  }
  return {WEXITSTATUS(wait_status), 0};
}

absl::StatusOr<ChildProcess> ChildProcess::Start(const ProcessSpec& spec) {
  if (access(spec.binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat("cannot execute '", spec.binary, "': ", strerror(errno)));
  }
  int pipe_fds[2] = {-1, -1};
  int log_fd = -1;
  if (spec.log_path.empty()) {
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
  } else {
    log_fd = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot open log file '", spec.log_path, "': ", strerror(errno)));
    }
  }
  // Everything the child needs is prepared before fork: only async-signal-safe calls after it.
  // The whole environment is built here: after fork, in a multi-threaded parent, even setenv's malloc
  // could deadlock.
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) merged[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& name : spec.unset_env) merged.erase(name);
  for (const auto& [k, v] : spec.env) merged[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : merged) env_strings.push_back(absl::StrCat(k, "=", v));
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(spec.binary.c_str()));
  for (const auto& a : spec.args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = getpid();

  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork failed: ", strerror(errno)));
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);  // tjctl blocks signals it waits for; children must not
    if (log_fd >= 0) {
      dup2(log_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
    } else {
      dup2(pipe_fds[1], STDOUT_FILENO);
    }
    execve(spec.binary.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent, so the group exists before we ever signal it
  if (log_fd >= 0) close(log_fd);
  if (pipe_fds[1] >= 0) close(pipe_fds[1]);
  ChildProcess child;
  child.pid_ = pid;
  child.pidfd_ = PidfdOpen(pid);
  child.stdout_fd_ = pipe_fds[0];
  child.binary_ = spec.binary;
  return child;
}

absl::StatusOr<ChildProcess> ChildProcess::StartAndWaitListening(
    const std::string& binary, const std::vector<std::string>& args,
    const std::map<std::string, std::string>& env, absl::Duration timeout) {
  auto child = Start(ProcessSpec{binary, args, env, "", {}});
  if (!child.ok()) return child.status();
  if (auto s = child->ReadListeningLine(timeout); !s.ok()) return s;
  return child;
}

absl::Status ChildProcess::ReadListeningLine(absl::Duration timeout) {
  std::string line;
  const absl::Time deadline = absl::Now() + timeout;
  while (line.find('\n') == std::string::npos) {
    pollfd p{stdout_fd_, POLLIN, 0};
    if (poll(&p, 1, RemainingMillis(deadline)) <= 0) {
      return absl::DeadlineExceededError(
          absl::StrCat(binary_, " did not print LISTENING within ", absl::FormatDuration(timeout)));
    }
    char buf[256];
    const ssize_t n = read(stdout_fd_, buf, sizeof(buf));
    if (n <= 0) {
      auto exit = WaitForExit(absl::Seconds(1));
      return absl::UnavailableError(absl::StrCat(
          binary_, " exited before listening",
          exit ? absl::StrCat(" (exit code ", exit->exit_code, ")") : std::string()));
    }
    line.append(buf, static_cast<size_t>(n));
  }
  constexpr std::string_view kPrefix = "LISTENING ";
  if (line.rfind(kPrefix, 0) != 0) {
    return absl::InternalError(absl::StrCat(binary_, " printed '", line, "' instead of LISTENING"));
  }
  address_ = line.substr(kPrefix.size(), line.find('\n') - kPrefix.size());
  return absl::OkStatus();
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept { *this = std::move(other); }

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  std::swap(pid_, other.pid_);
  std::swap(pidfd_, other.pidfd_);
  std::swap(stdout_fd_, other.stdout_fd_);
  std::swap(address_, other.address_);
  std::swap(binary_, other.binary_);
  return *this;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) KillAndWait(SIGKILL);
  if (stdout_fd_ >= 0) close(stdout_fd_);
  if (pidfd_ >= 0) close(pidfd_);
}

std::optional<ProcessExit> ChildProcess::WaitForExit(absl::Duration timeout) {
  if (pid_ <= 0) return std::nullopt;
  if (pidfd_ >= 0 && timeout > absl::ZeroDuration()) {
    pollfd p{pidfd_, POLLIN, 0};
    poll(&p, 1, RemainingMillis(absl::Now() + timeout));
  }
  int status = 0;
  const pid_t done = waitpid(pid_, &status, WNOHANG);
  if (done != pid_) return std::nullopt;
  pid_ = -1;
  return DecodeWaitStatus(status);
}

ProcessExit ChildProcess::KillAndWait(int signal) {
  if (pid_ <= 0) return {};
  kill(-pid_, signal);
  kill(pid_, signal);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return DecodeWaitStatus(status);
}

ProcessExit ChildProcess::Terminate(absl::Duration grace) {
  if (pid_ <= 0) return {};
  const pid_t group = pid_;
  kill(-group, SIGTERM);
  std::optional<ProcessExit> exit = WaitForExit(grace);
  if (!exit) exit = KillAndWait(SIGKILL);
  kill(-group, SIGKILL);  // whatever the leader left behind in its group
  return *exit;
}

int PickFreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace tj::local
