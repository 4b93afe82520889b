#include "tjctl/local/termination_signals.h"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace tj::local {

absl::StatusOr<TerminationSignals> TerminationSignals::Block() {
  TerminationSignals signals;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  if (pthread_sigmask(SIG_BLOCK, &set, &signals.previous_) != 0) {
    return absl::InternalError("cannot block SIGINT/SIGTERM/SIGHUP");
  }
  signals.fd_ = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signals.fd_ < 0) {
    const int error = errno;
    pthread_sigmask(SIG_SETMASK, &signals.previous_, nullptr);
    return absl::InternalError(absl::StrCat("signalfd: ", strerror(error)));
  }
  return signals;
}

TerminationSignals::TerminationSignals(TerminationSignals&& other) noexcept
    : fd_(other.fd_), previous_(other.previous_) {
  other.fd_ = -1;
}

TerminationSignals::~TerminationSignals() {
  if (fd_ < 0) return;
  close(fd_);
  pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

std::optional<int> TerminationSignals::Poll() {
  signalfd_siginfo info{};
  const ssize_t n = read(fd_, &info, sizeof(info));
  if (n != static_cast<ssize_t>(sizeof(info))) return std::nullopt;
  return static_cast<int>(info.ssi_signo);
}

const char* SignalName(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGKILL: return "SIGKILL";
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGQUIT: return "SIGQUIT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGPIPE: return "SIGPIPE";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    default: break;
  }
  static thread_local std::string other;
  other = absl::StrCat("signal ", signal);
  return other.c_str();
}

}  // namespace tj::local
