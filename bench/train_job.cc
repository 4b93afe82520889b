#include "bench/train_job.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"

namespace tj::bench {
namespace {

using json = nlohmann::json;

std::string FreeAddress() { return absl::StrCat("127.0.0.1:", local::PickFreePort()); }

}  // namespace

absl::StatusOr<std::unique_ptr<TrainJob>> TrainJob::Create(const TrainJobOptions& options) {
  std::string pattern = absl::StrCat(options.parent_dir, "/", options.name, "-XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("cannot make a directory under ", options.parent_dir));
  }
  std::unique_ptr<TrainJob> job(new TrainJob(options));
  job->dir_ = pattern;
  job->chief_ = FreeAddress();
  for (int i = 0; i < options.num_ps; ++i) job->ps_.push_back(FreeAddress());
  for (int i = 0; i < options.workers; ++i) job->workers_.push_back(FreeAddress());
  return job;
}

TrainJob::~TrainJob() {
  for (auto& [name, process] : processes_) process.KillAndWait(SIGKILL);
  processes_.clear();
  if (!options_.keep) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string TrainJob::WorkerName(int i) { return absl::StrCat("worker-", i); }

absl::Status TrainJob::StartServers() {
  if (absl::Status s = StartPs(); !s.ok()) return s;
  for (int i = 0; i < workers(); ++i) {
    if (absl::Status s = StartWorker(i); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::string TrainJob::PsName(int i) { return absl::StrCat("ps-", i); }

absl::Status TrainJob::StartPs() {
  for (int i = 0; i < num_ps(); ++i) {
    if (absl::Status s = StartPs(i); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status TrainJob::StartPs(int i) { return Start(PsName(i), "ps", i, {}); }

absl::Status TrainJob::StartWorker(int i) { return Start(WorkerName(i), "worker", i, {}); }

absl::Status TrainJob::StartChief(const std::vector<std::string>& args) {
  return Start("chief", "chief", 0, args);
}

pid_t TrainJob::pid(const std::string& name) const {
  auto it = processes_.find(name);
  return it == processes_.end() ? -1 : it->second.pid();
}

void TrainJob::Kill(const std::string& name) {
  auto it = processes_.find(name);
  if (it != processes_.end()) it->second.KillAndWait(SIGKILL);
}

bool TrainJob::Signal(const std::string& name, int signal) {
  const pid_t p = pid(name);
  return p > 0 && kill(-p, signal) == 0;
}

std::optional<int> TrainJob::WaitForExit(const std::string& name, absl::Duration timeout) {
  auto it = processes_.find(name);
  if (it == processes_.end()) return std::nullopt;
  auto exit = it->second.WaitForExit(timeout);
  if (!exit.has_value()) return std::nullopt;
  return exit->signal != 0 ? 128 + exit->signal : exit->exit_code;
}

std::optional<TrainProgress> TrainJob::ReadProgress() const {
  std::ifstream in(progress_path());
  if (!in) return std::nullopt;
  const json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("step")) return std::nullopt;
  TrainProgress p;
  p.state = j.value("state", "");
  p.step = j["step"].get<int64_t>();
  if (j.contains("lastCheckpointStep")) {
    p.last_checkpoint_step = j["lastCheckpointStep"].get<int64_t>();
  }
  if (j.contains("restoredFromStep")) p.restored_from_step = j["restoredFromStep"].get<int64_t>();
  return p;
}

std::string TrainJob::Log(const std::string& name) const {
  std::ifstream in(log_path(name));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string TrainJob::LogTail(const std::string& name, size_t lines) const {
  const std::string text = Log(name);
  size_t pos = text.size();
  for (size_t n = 0; n <= lines && pos != std::string::npos && pos > 0; ++n) {
    pos = text.rfind('\n', pos - 1);
  }
  return pos == std::string::npos ? text : text.substr(pos + 1);
}

std::string TrainJob::TfConfig(const std::string& type, int index) const {
  const json cluster = {{"chief", {chief_}}, {"ps", ps_}, {"worker", workers_}};
  return json{
      {"cluster", cluster}, {"task", {{"type", type}, {"index", index}}}, {"environment", "cloud"}}
      .dump();
}

absl::Status TrainJob::Start(const std::string& name, const std::string& type, int index,
                             const std::vector<std::string>& args) {
  local::ProcessSpec spec;
  spec.binary = options_.train_binary;
  spec.args = args;
  spec.env = env_;
  spec.env["TF_CONFIG"] = TfConfig(type, index);
  spec.env["TJ_CHECKPOINT_DIR"] = dir_ + "/checkpoints";
  spec.env["TJ_PROGRESS_FILE"] = progress_path();
  spec.log_path = log_path(name);
  // Variables of the job contract must come from this job only.
  spec.unset_env = {"TJ_TOKEN", "TJ_TOKEN_FILE", "TJ_CHECKPOINT_INTERVAL_STEPS",
                    "TJ_PREEMPTION_GRACE_PERIOD_SECONDS", "TJ_RESTART_EXIT_CODE"};
  auto process = local::ChildProcess::Start(spec);
  if (!process.ok()) return process.status();
  auto it = processes_.find(name);
  if (it != processes_.end()) it->second.KillAndWait(SIGKILL);
  processes_.erase(name);
  processes_.emplace(name, *std::move(process));
  return absl::OkStatus();
}

absl::StatusOr<SeenProgress> WaitForProgress(const TrainJob& job,
                                             const std::function<bool(const TrainProgress&)>& done,
                                             absl::Duration timeout, const std::string& what) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + absl::ToChronoMilliseconds(timeout);
  while (Clock::now() < deadline) {
    const auto now = Clock::now();
    if (auto p = job.ReadProgress(); p.has_value() && done(*p)) return SeenProgress{now, *p};
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return absl::DeadlineExceededError(absl::StrCat("timed out after ", absl::FormatDuration(timeout),
                                                  " waiting for ", what, "; chief log:\n",
                                                  job.LogTail("chief")));
}

std::optional<LogLine> LogLineAfter(const std::string& log, const std::string& needle,
                                    absl::Time after) {
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(needle) == std::string::npos || line.size() < 25 || line[0] != '[') continue;
    absl::Time t;
    std::string err;
    if (!absl::ParseTime("%Y-%m-%d %H:%M:%E*S", line.substr(1, 23), absl::LocalTimeZone(), &t,
                         &err)) {
      continue;
    }
    // Stamps have millisecond resolution.
    if (t >= after - absl::Milliseconds(1)) return LogLine{t, line};
  }
  return std::nullopt;
}

std::optional<absl::Time> LogTimeOf(const std::string& log, const std::string& needle,
                                    absl::Time after) {
  auto line = LogLineAfter(log, needle, after);
  if (!line.has_value()) return std::nullopt;
  return line->at;
}

bool TrainJobInputsPresent(const std::string& program, const std::string& train_binary,
                           const std::string& data) {
  if (access(train_binary.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "%s: %s is not executable (build tj-train)\n", program.c_str(),
                 train_binary.c_str());
    return false;
  }
  if (!std::filesystem::exists(data)) {
    std::fprintf(stderr,
                 "%s: no data at %s (Debian package python3-sklearn ships the digits; "
                 "scripts/install-deps.sh)\n",
                 program.c_str(), data.c_str());
    return false;
  }
  return true;
}

}  // namespace tj::bench
