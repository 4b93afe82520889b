#include "tjctl/preempt_command.h"

#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/base/strings.h"
#include "coordinator/coordination/coordination_client.h"
#include "nlohmann/json.hpp"
#include "tjctl/local/disruption_marker.h"

namespace tj {
namespace {

namespace fs = std::filesystem;

std::optional<nlohmann::json> ReadStatus(const std::string& work_dir) {
  std::ifstream in(work_dir + "/status.json");
  if (!in) return std::nullopt;
  nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) return std::nullopt;
  return json;
}

bool Finished(const nlohmann::json& status) {
  const std::string phase = status.value("phase", "");
  return phase == "Succeeded" || phase == "Failed";
}

// The newest run of `job` under `runs_dir` that has not finished.
std::optional<std::string> FindRun(const PreemptOptions& options) {
  std::optional<std::string> best;
  fs::file_time_type best_time;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(options.runs_dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(options.job + "-")) continue;
    auto status = ReadStatus(entry.path().string());
    if (!status || status->value("job", "") != options.job || Finished(*status)) continue;
    const auto time = fs::last_write_time(entry.path() / "status.json", error);
    if (!best || time > best_time) {
      best = entry.path().string();
      best_time = time;
    }
  }
  return best;
}

std::string TfType(const std::string& replica_type) {
  if (replica_type == "Coordinator") return "chief";
  if (replica_type == "PS") return "ps";
  return "worker";
}

bool Alive(pid_t pid) { return pid > 0 && kill(pid, 0) == 0; }

}  // namespace

int RunPreempt(const PreemptOptions& options) {
  std::string work_dir = options.work_dir;
  if (work_dir.empty()) {
    auto found = FindRun(options);
    if (!found) {
      std::fprintf(stderr, "tjctl preempt: no running job '%s' under %s/ (give --work-dir)\n",
                   options.job.c_str(), options.runs_dir.c_str());
      return 2;
    }
    work_dir = *found;
  }
  auto status = ReadStatus(work_dir);
  if (!status) {
    std::fprintf(stderr, "tjctl preempt: %s/status.json is missing or unreadable\n",
                 work_dir.c_str());
    return 2;
  }
  const nlohmann::json& replicas = (*status)["replicas"];
  std::string name = options.replica;
  if (!replicas.contains(name)) name = options.job + "-" + options.replica;
  if (!replicas.contains(name)) {
    std::string known;
    for (const auto& [key, value] : replicas.items()) known += " " + key;
    std::fprintf(stderr, "tjctl preempt: job '%s' has no replica '%s'; it has:%s\n",
                 options.job.c_str(), options.replica.c_str(), known.c_str());
    return 2;
  }
  const nlohmann::json& replica = replicas[name];
  const pid_t pid = replica["pid"].is_number_integer() ? replica["pid"].get<pid_t>() : -1;
  if (!Alive(pid)) {
    std::fprintf(stderr, "tjctl preempt: %s is not running\n", name.c_str());
    return 1;
  }
  std::string coordinator;
  std::string coordinator_name;
  pid_t coordinator_pid = -1;
  for (const auto& [key, value] : replicas.items()) {
    if (value.value("type", "") != "Coordinator") continue;
    // A TensorFlow chief serves TensorFlow's server at its address and ours beside it.
    coordinator = value.value("coordinationAddress", value.value("address", ""));
    coordinator_name = key;
    if (value["pid"].is_number_integer()) coordinator_pid = value["pid"].get<pid_t>();
  }
  if (options.grace_seconds < 0) {
    std::fprintf(stderr, "tjctl preempt: --grace must be >= 0\n");
    return 2;
  }
  const absl::Duration grace = absl::Seconds(options.grace_seconds);
  const absl::Time deadline = absl::Now() + grace;

  absl::Status marked = local::WriteDisruptionMarker(work_dir, name, "tjctl preempt", grace);
  // A PS preemption makes the coordinator checkpoint and exit for a restart: that exit is part of
  // the disruption too, not a failure counted toward backoffLimit.
  if (marked.ok() && replica.value("type", "") == "PS" && !coordinator_name.empty()) {
    marked = local::WriteDisruptionMarker(work_dir, coordinator_name, "tjctl preempt of " + name,
                                          grace);
  }
  if (!marked.ok()) {
    std::fprintf(stderr, "tjctl preempt: %s\n", std::string(marked.message()).c_str());
    return 1;
  }
  // The notice carries the run's control-role credential (tjctl run wrote it).
  if (fs::exists(work_dir + "/credentials/control")) {
    ::setenv("TJ_TOKEN_FILE", (work_dir + "/credentials/control").c_str(), 1);
  }
  // And its TLS certificates, when the run has them (tjctl run --tls).
  if (fs::exists(work_dir + "/tls/ca.crt")) ::setenv("TJ_TLS_DIR", (work_dir + "/tls").c_str(), 1);
  if (!coordinator.empty()) {
    CoordinationClient client(coordinator, absl::Seconds(5));
    auto response = client.SendPreemptionNotice(
        MakeTaskId(TfType(replica.value("type", "")), replica.value("index", 0)),
        "tjctl preempt", deadline);
    if (response.ok()) {
      std::printf("notice for %s: %s: %s\n", name.c_str(),
                  response->accepted() ? "accepted" : "not accepted",
                  response->decision().c_str());
    } else {
      std::printf("notice for %s not delivered (%s); terminating it anyway\n", name.c_str(),
                  response.status().ToString().c_str());
    }
  }
  std::fflush(stdout);
  absl::SleepFor(deadline - absl::Now());
  if (replica.value("type", "") == "PS" && Alive(coordinator_pid)) {
    // The coordinator checkpoints the PS before it exits; the platform's termination grace
    // period (30 s by default) is what lets it finish.
    const absl::Time give_up = absl::Now() + absl::Seconds(30);
    while (Alive(coordinator_pid) && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(20));
  }
  if (!Alive(pid)) {
    std::printf("%s exited before its deadline\n", name.c_str());
    return 0;
  }
  // Each replica is its own process group (tjctl/local/process.h).
  kill(-pid, SIGTERM);
  const absl::Time kill_at = absl::Now() + absl::Seconds(30);
  while (Alive(pid) && absl::Now() < kill_at) absl::SleepFor(absl::Milliseconds(20));
  if (Alive(pid)) kill(-pid, SIGKILL);
  std::printf("%s terminated (SIGTERM%s)\n", name.c_str(), Alive(pid) ? ", then SIGKILL" : "");
  return 0;
}

void AddPreemptCommand(CLI::App& app, PreemptOptions& options, int& exit_code) {
  CLI::App* command = app.add_subcommand(
      "preempt",
      "simulate a spot preemption of one replica of a job started with `tjctl run`: a preemption "
      "notice to its coordinator, then the process terminated after the grace period");
  command->add_option("job", options.job, "the job's name (metadata.name)")->required();
  command->add_option("replica", options.replica,
                      "ps-0, worker-1, coordinator-0 (or the full replica name)")
      ->required();
  command->add_option("--grace", options.grace_seconds,
                      "seconds between the notice and the termination")
      ->capture_default_str();
  command->add_option("--work-dir", options.work_dir,
                      "the run's work directory (default: the newest running one under "
                      "--runs-dir)");
  command->add_option("--runs-dir", options.runs_dir, "where tjctl run keeps its runs")
      ->capture_default_str();
  command->callback([&options, &exit_code] { exit_code = RunPreempt(options); });
}

}  // namespace tj
