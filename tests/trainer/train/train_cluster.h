// A tj-train job of real processes for the tests: one PS (or more), workers and the coordinator,
// each started with TF_CONFIG and the TJ_* environment the way the operator and `tjctl run` start
// them, logs in a temporary directory, progress read from the coordinator's progress file.
#pragma once

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1alpha1/training_progress.h"
#include "coordinator/base/job_roles.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/support/temp_dir.h"
#include "tests/support/wait_for.h"
#include "tjctl/local/process.h"

namespace tj::testing {

class TrainCluster {
 public:
  // `binary` plays every role (tj-train, or a program built on the SDK).
  TrainCluster(int num_ps, int num_workers, std::string binary = TJ_TRAIN_BINARY)
      : binary_(std::move(binary)), num_ps_(num_ps), num_workers_(num_workers) {
    chief_ = Address();
    for (int i = 0; i < num_ps; ++i) ps_.push_back(Address());
    for (int i = 0; i < num_workers; ++i) workers_.push_back(Address());
  }

  const std::string& ps_address(int i) const { return ps_[static_cast<size_t>(i)]; }
  const std::string& worker_address(int i) const { return workers_[static_cast<size_t>(i)]; }
  std::string checkpoint_dir() const { return dir_.Join("checkpoints"); }
  std::string progress_path() const { return dir_.Join("progress.json"); }
  std::string log_path(const std::string& name) const { return dir_.Join(name + ".log"); }
  // Extra TJ_* variables for every process (checkpoint interval...).
  std::map<std::string, std::string>& env() { return env_; }
  // Every process gets its own role's credential derived from `secret` and the verifiers, as the
  // operator and `tjctl run` hand them out (TJ_TOKEN_FILE, TJ_TOKEN_VERIFIERS_FILE).
  void UseRoleCredentials(const std::string& secret) {
    std::filesystem::create_directories(credentials_dir());
    for (const auto& [name, content] : JobCredentialFiles(secret)) {
      std::ofstream(credentials_dir() + "/" + name) << content;
    }
    role_credentials_ = true;
  }
  std::string credentials_dir() const { return dir_.Join("credentials"); }
  // How many workers the coordinator's TF_CONFIG lists (default: all): a coordinator started
  // before the job was scaled up.
  void set_workers_known_to_chief(int n) { workers_known_to_chief_ = n; }

  void StartServers() {
    for (int i = 0; i < num_ps_; ++i) StartPs(i);
    for (int i = 0; i < num_workers_; ++i) StartWorker(i);
  }
  void StartPs(int i) { Start(Name("ps", i), "ps", i, {}); }
  void StartWorker(int i) { Start(Name("worker", i), "worker", i, {}); }
  // `extra_env` for the coordinator alone (e.g. TJ_METRICS_ADDRESS: every process here shares a
  // host, and a PS or worker given it would serve /metrics on the same port).
  void StartChief(const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& extra_env = {}) {
    Start("chief", "chief", 0, args, extra_env);
  }
  // A coordinator under another process name, with `extra_env` over the cluster's, listening on
  // `own_address` (its TF_CONFIG's chief) instead of the one the other tasks know: a second
  // coordinator of the job, as after a force-deleted pod.
  void StartChiefAs(const std::string& name, const std::vector<std::string>& args,
                    const std::map<std::string, std::string>& extra_env,
                    const std::string& own_address) {
    Start(name, "chief", 0, args, extra_env, own_address);
  }
  static std::string FreeAddress() { return Address(); }

  // SIGKILLs a process (a lost pod) and reaps it.
  local::ProcessExit Kill(const std::string& name) {
    return processes_.at(name).KillAndWait(SIGKILL);
  }
  // Sends `signal` to a process and waits for it to exit; its exit code (128 + N for a signal).
  int SignalAndWait(const std::string& name, int signal) {
    const local::ProcessExit exit = processes_.at(name).KillAndWait(signal);
    return exit.signal != 0 ? 128 + exit.signal : exit.exit_code;
  }
  // Sends `signal` to a process without waiting for it.
  void Signal(const std::string& name, int signal) {
    ASSERT_EQ(::kill(processes_.at(name).pid(), signal), 0) << name;
  }
  // A process's exit code (128 + N for a signal) within `timeout`; nullopt if still running.
  std::optional<int> WaitForExit(const std::string& name, absl::Duration timeout) {
    auto exit = processes_.at(name).WaitForExit(timeout);
    if (!exit.has_value()) return std::nullopt;
    return exit->signal != 0 ? 128 + exit->signal : exit->exit_code;
  }
  const std::string& chief_address() const { return chief_; }
  // Committed checkpoint directories (with a manifest), oldest first.
  std::vector<std::string> Checkpoints() const {
    std::vector<std::string> out;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(checkpoint_dir(), error)) {
      if (std::filesystem::exists(entry.path() / "MANIFEST.json")) {
        out.push_back(entry.path().filename().string());
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // The coordinator's exit code, waiting up to `timeout`; nullopt if it is still running.
  std::optional<int> WaitForChief(absl::Duration timeout = absl::Seconds(180)) {
    auto exit = processes_.at("chief").WaitForExit(timeout);
    if (!exit.has_value()) return std::nullopt;
    return exit->signal != 0 ? 128 + exit->signal : exit->exit_code;
  }

  std::optional<v1alpha1::TrainingProgress> Progress() const {
    std::ifstream in(progress_path());
    if (!in) return std::nullopt;
    const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) return std::nullopt;
    auto progress = v1alpha1::TrainingProgressFromJson(json);
    if (!progress.ok()) return std::nullopt;
    return *progress;
  }
  int64_t Step() const {
    auto progress = Progress();
    return progress ? progress->step : -1;
  }
  // Waits until the coordinator reports at least `step` steps.
  bool WaitForStep(int64_t step) {
    return WaitFor([&] { return Step() >= step; }, absl::Seconds(120));
  }

  std::string Log(const std::string& name) const {
    std::ifstream in(log_path(name));
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  static std::string Name(const std::string& type, int i) { return absl::StrCat(type, "-", i); }

 private:
  static std::string Address() { return absl::StrCat("127.0.0.1:", local::PickFreePort()); }

  std::string TfConfig(const std::string& type, int index,
                       const std::string& chief_address = "") const {
    std::vector<std::string> workers = workers_;
    if (type == "chief" && workers_known_to_chief_ >= 0) {
      workers.resize(static_cast<size_t>(workers_known_to_chief_));
    }
    nlohmann::json cluster = {{"chief", {chief_address.empty() ? chief_ : chief_address}},
                              {"ps", ps_},
                              {"worker", workers}};
    return nlohmann::json{{"cluster", cluster},
                          {"task", {{"type", type}, {"index", index}}},
                          {"environment", "cloud"}}
        .dump();
  }

  void Start(const std::string& name, const std::string& type, int index,
             const std::vector<std::string>& args,
             const std::map<std::string, std::string>& extra_env = {},
             const std::string& chief_address = "") {
    local::ProcessSpec spec;
    spec.binary = binary_;
    spec.args = args;
    spec.env = env_;
    spec.env["TF_CONFIG"] = TfConfig(type, index, chief_address);
    spec.env["TJ_CHECKPOINT_DIR"] = checkpoint_dir();
    spec.env["TJ_PROGRESS_FILE"] = progress_path();
    if (role_credentials_) {
      const std::string role = type == "chief" ? "coordinator" : type;
      spec.env["TJ_TOKEN_FILE"] = credentials_dir() + "/" + role;
      spec.env["TJ_TOKEN_VERIFIERS_FILE"] = credentials_dir() + "/verifiers";
    }
    for (const auto& [key, value] : extra_env) spec.env[key] = value;
    spec.log_path = log_path(name);
    auto process = local::ChildProcess::Start(spec);
    ASSERT_TRUE(process.ok()) << process.status();
    processes_.erase(name);
    processes_.emplace(name, *std::move(process));
  }

  TempDir dir_;
  std::string binary_;
  int num_ps_;
  int num_workers_;
  std::string chief_;
  std::vector<std::string> ps_;
  std::vector<std::string> workers_;
  int workers_known_to_chief_ = -1;
  bool role_credentials_ = false;
  std::map<std::string, std::string> env_;
  std::map<std::string, local::ChildProcess> processes_;
};

}  // namespace tj::testing
