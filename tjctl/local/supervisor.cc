#include "tjctl/local/supervisor.h"

#include <poll.h>
#include <signal.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace tj::local {

absl::Status Supervisor::Start(const std::string& name, const ProcessSpec& spec) {
  if (running(name)) {
    return absl::AlreadyExistsError(absl::StrCat("process '", name, "' is already running"));
  }
  auto child = ChildProcess::Start(spec);
  if (!child.ok()) return child.status();
  processes_.insert_or_assign(name, std::move(*child));
  return absl::OkStatus();
}

std::optional<NamedExit> Supervisor::WaitForAnyExit(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::string> names;
    for (auto& [name, process] : processes_) {
      if (!process.running()) continue;
      if (auto exit = process.WaitForExit(absl::ZeroDuration())) return NamedExit{name, *exit};
      fds.push_back(pollfd{process.exit_fd(), POLLIN, 0});
      names.push_back(name);
    }
    if (fds.empty()) return std::nullopt;
    const int64_t ms = std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now()));
    const int ready = poll(fds.data(), fds.size(), static_cast<int>(std::min<int64_t>(ms, 1 << 30)));
    if (ready <= 0) {
      if (absl::Now() >= deadline) return std::nullopt;
      continue;  // EINTR
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if ((fds[i].revents & POLLIN) == 0) continue;
      if (auto exit = processes_.at(names[i]).WaitForExit(absl::ZeroDuration())) {
        return NamedExit{names[i], *exit};
      }
    }
  }
}

std::optional<ProcessExit> Supervisor::Stop(const std::string& name, absl::Duration grace) {
  auto it = processes_.find(name);
  if (it == processes_.end() || !it->second.running()) return std::nullopt;
  return it->second.Terminate(grace);
}

void Supervisor::StopAll(absl::Duration grace) {
  // SIGTERM to everyone first, so they shut down in parallel within one grace period.
  const absl::Time deadline = absl::Now() + grace;
  for (auto& [name, process] : processes_) {
    if (process.running()) kill(-process.pid(), SIGTERM);
  }
  for (auto& [name, process] : processes_) {
    if (!process.running()) continue;
    if (!process.WaitForExit(std::max(absl::ZeroDuration(), deadline - absl::Now()))) {
      process.KillAndWait(SIGKILL);
    }
  }
}

bool Supervisor::running(const std::string& name) const {
  auto it = processes_.find(name);
  return it != processes_.end() && it->second.running();
}

int Supervisor::num_running() const {
  int n = 0;
  for (const auto& [name, process] : processes_) n += process.running() ? 1 : 0;
  return n;
}

std::optional<pid_t> Supervisor::pid(const std::string& name) const {
  auto it = processes_.find(name);
  if (it == processes_.end() || !it->second.running()) return std::nullopt;
  return it->second.pid();
}

}  // namespace tj::local
