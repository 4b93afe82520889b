// Supervisor: the named processes of a job running on this machine. It starts and restarts them,
// reports which one exited and how (waiting on all of them at once through their pidfds), and stops
// them all, in order and with a grace period, however tjctl ends.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tjctl/local/process.h"

namespace tj::local {

struct NamedExit {
  std::string name;
  ProcessExit exit;
};

class Supervisor {
 public:
  Supervisor() = default;
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;
  ~Supervisor() { StopAll(absl::ZeroDuration()); }

  // Starts (or restarts, if it has exited) the process `name`. AlreadyExists if it is running.
  absl::Status Start(const std::string& name, const ProcessSpec& spec);
  // The next process to exit within `timeout`, reaped; nullopt if none did (or none is running).
  std::optional<NamedExit> WaitForAnyExit(absl::Duration timeout);
  // SIGTERM, then SIGKILL after `grace`. No-op for a process that is not running.
  std::optional<ProcessExit> Stop(const std::string& name, absl::Duration grace);
  void StopAll(absl::Duration grace);

  bool running(const std::string& name) const;
  int num_running() const;
  std::optional<pid_t> pid(const std::string& name) const;

 private:
  std::map<std::string, ChildProcess> processes_;
};

}  // namespace tj::local
