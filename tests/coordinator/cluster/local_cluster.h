// LocalCluster: real tj-worker and tj-ps processes on 127.0.0.1 for the coordinator's fault tests.
// Workers keep their port across restarts, as a restarted pod keeps its Service name.
#pragma once

#include <signal.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tjctl/local/process.h"

namespace tj::testing {

using local::ChildProcess;
using local::PickFreePort;

class LocalCluster {
 public:
  LocalCluster(int num_workers, int num_ps) {
    for (int i = 0; i < num_ps; ++i) ps_ports_.push_back(PickFreePort());
    for (int i = 0; i < num_workers; ++i) worker_ports_.push_back(PickFreePort());
    ps_.resize(static_cast<size_t>(num_ps));
    workers_.resize(static_cast<size_t>(num_workers));
  }

  absl::Status StartAll() {
    for (size_t i = 0; i < ps_.size(); ++i) {
      if (auto s = StartPs(static_cast<int>(i)); !s.ok()) return s;
    }
    for (size_t i = 0; i < workers_.size(); ++i) {
      if (auto s = StartWorker(static_cast<int>(i)); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status StartWorker(int i) {
    std::vector<std::string> args = {"--address", worker_address(i), "--task", absl::StrCat(i)};
    if (!ps_ports_.empty()) {
      args.push_back("--ps");
      args.push_back(absl::StrJoin(ps_addresses(), ","));
    }
    auto child = ChildProcess::StartAndWaitListening(TJ_WORKER_BINARY, args);
    if (!child.ok()) return child.status();
    workers_[static_cast<size_t>(i)].emplace(std::move(*child));
    return absl::OkStatus();
  }

  absl::Status StartPs(int i) {
    auto child = ChildProcess::StartAndWaitListening(
        TJ_PS_BINARY, {"--address", ps_address(i), "--task", absl::StrCat(i)});
    if (!child.ok()) return child.status();
    ps_[static_cast<size_t>(i)].emplace(std::move(*child));
    return absl::OkStatus();
  }

  // SIGKILL: no goodbye, as when a node or a container dies.
  void KillWorker(int i) { workers_[static_cast<size_t>(i)]->KillAndWait(SIGKILL); }
  void KillPs(int i) { ps_[static_cast<size_t>(i)]->KillAndWait(SIGKILL); }

  std::string worker_address(int i) const {
    return absl::StrCat("127.0.0.1:", worker_ports_[static_cast<size_t>(i)]);
  }
  std::string ps_address(int i) const {
    return absl::StrCat("127.0.0.1:", ps_ports_[static_cast<size_t>(i)]);
  }
  std::vector<std::string> worker_addresses() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < worker_ports_.size(); ++i) out.push_back(worker_address(static_cast<int>(i)));
    return out;
  }
  std::vector<std::string> ps_addresses() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < ps_ports_.size(); ++i) out.push_back(ps_address(static_cast<int>(i)));
    return out;
  }

 private:
  std::vector<int> worker_ports_;
  std::vector<int> ps_ports_;
  std::vector<std::optional<ChildProcess>> workers_;
  std::vector<std::optional<ChildProcess>> ps_;
};

}  // namespace tj::testing
