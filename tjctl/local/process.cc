#include "tjctl/local/process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace tj::local {

absl::StatusOr<ChildProcess> ChildProcess::StartAndWaitListening(
    const std::string& binary, const std::vector<std::string>& args,
    const std::map<std::string, std::string>& env, absl::Duration timeout) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  ChildProcess child;
  child.pid_ = pid;
  child.stdout_fd_ = pipe_fds[0];
  std::string line;
  const absl::Time deadline = absl::Now() + timeout;
  while (line.find('\n') == std::string::npos) {
    pollfd p{child.stdout_fd_, POLLIN, 0};
    const int ms = static_cast<int>(absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (ms <= 0 || poll(&p, 1, ms) <= 0) {
      return absl::DeadlineExceededError(absl::StrCat(binary, " did not print LISTENING in time"));
    }
    char buf[256];
    const ssize_t n = read(child.stdout_fd_, buf, sizeof(buf));
    if (n <= 0) return absl::UnavailableError(absl::StrCat(binary, " exited before listening"));
    line.append(buf, static_cast<size_t>(n));
  }
  constexpr std::string_view kPrefix = "LISTENING ";
  if (line.rfind(kPrefix, 0) != 0) {
    return absl::InternalError(absl::StrCat(binary, " printed '", line, "' instead of LISTENING"));
  }
  child.address_ = line.substr(kPrefix.size(), line.find('\n') - kPrefix.size());
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept { *this = std::move(other); }

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  std::swap(pid_, other.pid_);
  std::swap(stdout_fd_, other.stdout_fd_);
  std::swap(address_, other.address_);
  return *this;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0) KillAndWait(SIGKILL);
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

int ChildProcess::KillAndWait(int signal) {
  if (pid_ <= 0) return -1;
  kill(pid_, signal);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

int ChildProcess::Terminate(absl::Duration grace) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  const absl::Time deadline = absl::Now() + grace;
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    if (absl::Now() >= deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    absl::SleepFor(absl::Milliseconds(5));  // no pidfd wait in this libc wrapper; poll the exit
  }
  pid_ = -1;
  return status;
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
