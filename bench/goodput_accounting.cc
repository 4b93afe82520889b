#include "bench/goodput_accounting.h"

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "api/v1alpha1/training_progress.h"
#include "bench/bench_support.h"
#include "bench/train_job.h"
#include "jobcontrol/goodput.h"

namespace tj::bench {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

struct AccountedRun {
  bool faults = false;
  double wall_s = 0;  // the first coordinator's start to the last one's exit (bench clock)
  int worker_kills = 0;
  int chief_kills = 0;
  v1alpha1::JobGoodput account;
  std::string load_start;
  std::string load_end;
};

std::optional<v1alpha1::TrainingProgress> ReadFullProgress(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  const json parsed = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return std::nullopt;  // replaced while read: the next read has it
  auto progress = v1alpha1::TrainingProgressFromJson(parsed);
  if (!progress.ok()) return std::nullopt;
  return *std::move(progress);
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

absl::StatusOr<AccountedRun> MeasureAccountedRun(const AccountingConfig& config, bool faults) {
  AccountedRun run;
  run.faults = faults;
  run.load_start = LoadAverage();
  auto created = TrainJob::Create(
      TrainJobOptions{.train_binary = config.train_binary,
                      .parent_dir = config.dir,
                      .name = absl::StrCat("tj-bench-goodput-accounting-", faults ? "f" : "0"),
                      .workers = config.workers,
                      .keep = config.keep});
  if (!created.ok()) return created.status();
  TrainJob& job = **created;
  job.env()["TJ_CHECKPOINT_INTERVAL_STEPS"] = absl::StrCat(config.checkpoint_every);
  const std::vector<std::string> args = {
      "--model=softmax", "--data=" + config.data, absl::StrCat("--steps=", config.steps),
      absl::StrCat("--step-sleep-ms=", config.step_ms), "--log-every-steps=10"};
  if (absl::Status s = job.StartServers(); !s.ok()) return s;
  const Clock::time_point started = Clock::now();
  if (absl::Status s = job.StartChief(args); !s.ok()) return s;
  const auto every = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(config.worker_kill_every_s));
  Clock::time_point next_fault = started + every;
  int fault = 0;
  int victim = 0;
  const Clock::time_point give_up = started + std::chrono::minutes(20);
  while (true) {
    if (auto p = ReadFullProgress(job.progress_path()); p && p->goodput) {
      run.account = MergeRun(run.account, *p->goodput);
    }
    if (std::optional<int> code = job.WaitForExit("chief", absl::ZeroDuration())) {
      if (*code != 0) {
        return absl::InternalError(absl::StrCat("the coordinator exited with ", *code,
                                                " unasked; log:\n", job.LogTail("chief")));
      }
      run.wall_s = Seconds(Clock::now() - started);
      break;
    }
    const Clock::time_point now = Clock::now();
    if (now > give_up) return absl::DeadlineExceededError("the job ran for 20 minutes");
    if (faults && now >= next_fault) {
      ++fault;
      next_fault = now + every;
      if (fault == config.chief_kill_at) {
        // A lost coordinator pod: the operator (or tjctl run) starts a new one at once.
        job.Kill("chief");
        ++run.chief_kills;
        // Its last report, if it wrote one after the previous read, is lost with it: the account
        // counts that time as restart (what the operator would see).
        if (absl::Status s = job.StartChief(args); !s.ok()) return s;
      } else {
        job.Kill(TrainJob::WorkerName(victim));
        ++run.worker_kills;
        if (absl::Status s = job.StartWorker(victim); !s.ok()) return s;
        victim = (victim + 1) % config.workers;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // The final report (state "succeeded") is written just before the exit.
  if (auto p = ReadFullProgress(job.progress_path()); p && p->goodput) {
    run.account = MergeRun(run.account, *p->goodput);
  }
  run.load_end = LoadAverage();
  return run;
}

json SplitJson(const v1alpha1::TimeSplit& split) { return v1alpha1::ToJson(split); }

}  // namespace

int RunAccounting(const AccountingConfig& config) {
  if (!TrainJobInputsPresent("tj-bench-goodput", config.train_binary, config.data)) return 1;
  std::printf(
      "tj-bench-goodput --accounting: tj-train, 1 PS + %d workers + coordinator on 127.0.0.1, "
      "%lld steps of %d ms sleep, checkpoint every %lld steps; faults: a worker SIGKILLed every "
      "%.1f s (restarted at once), the coordinator instead at fault %d\n",
      config.workers, static_cast<long long>(config.steps), config.step_ms,
      static_cast<long long>(config.checkpoint_every), config.worker_kill_every_s,
      config.chief_kill_at);
  std::printf("%-4s %-9s %8s %8s %8s %10s %10s %9s %9s %8s %7s  %s\n", "pair", "run", "wall s",
              "coord s", "kills", "coord gp", "coord/ff", "outside", "diff pp", "dprod s", "load",
              "lost (s)");
  json out;
  out["machine"] = MachineDescription();
  json pairs = json::array();
  for (int i = 0; i < config.runs; ++i) {
    auto clean = MeasureAccountedRun(config, false);
    if (!clean.ok()) {
      std::fprintf(stderr, "fault-free run: %s\n", clean.status().ToString().c_str());
      return 1;
    }
    auto faulty = MeasureAccountedRun(config, true);
    if (!faulty.ok()) {
      std::fprintf(stderr, "faulty run: %s\n", faulty.status().ToString().c_str());
      return 1;
    }
    const v1alpha1::TimeSplit clean_total = JobTotal(clean->account);
    const v1alpha1::TimeSplit faulty_total = JobTotal(faulty->account);
    const double g0 = GoodputRatio(clean_total).value_or(0);
    const double gf = GoodputRatio(faulty_total).value_or(0);
    // Outside: the share of the faulty run's wall time that the same steps need without faults.
    const double outside = faulty->wall_s > 0 ? clean->wall_s / faulty->wall_s : 0;
    const double relative = g0 > 0 ? gf / g0 : 0;
    const double diff_pp = (relative - outside) * 100;
    // The same steps should take the same productive time with faults and without: what the
    // faulty run trained longer (or shorter) in time no cause claims is the difference's source.
    const double productive_delta = faulty_total.productive - clean_total.productive;
    auto lost_text = [](const v1alpha1::TimeSplit& split) {
      std::string text;
      for (v1alpha1::LostCause cause : v1alpha1::kLostCauses) {
        if (split.lost_by(cause) < 0.05) continue;
        absl::StrAppend(&text, text.empty() ? "" : ", ",
                        std::string(v1alpha1::LostCauseLabel(cause)), " ",
                        absl::StrFormat("%.1f", split.lost_by(cause)));
      }
      return text;
    };
    std::printf("%-4d %-9s %8.2f %8.2f %8s %10.4f %10s %9s %9s %8s %7s  %s\n", i + 1,
                "fault-free", clean->wall_s, clean_total.wall, "-", g0, "-", "-", "-", "-",
                clean->load_start.substr(0, clean->load_start.find(' ')).c_str(),
                lost_text(clean_total).c_str());
    std::printf("%-4d %-9s %8.2f %8.2f %8s %10.4f %10.4f %9.4f %+9.2f %+8.2f %7s  %s\n", i + 1,
                "faults", faulty->wall_s, faulty_total.wall,
                absl::StrCat(faulty->worker_kills, "w+", faulty->chief_kills, "c").c_str(), gf,
                relative, outside, diff_pp, productive_delta,
                faulty->load_start.substr(0, faulty->load_start.find(' ')).c_str(),
                lost_text(faulty_total).c_str());
    std::fflush(stdout);
    pairs.push_back({{"fault_free",
                      {{"wall_s", clean->wall_s},
                       {"coordinator", SplitJson(clean_total)},
                       {"goodput", g0},
                       {"load", {clean->load_start, clean->load_end}}}},
                     {"faults",
                      {{"wall_s", faulty->wall_s},
                       {"worker_kills", faulty->worker_kills},
                       {"chief_kills", faulty->chief_kills},
                       {"coordinator", SplitJson(faulty_total)},
                       {"goodput", gf},
                       {"load", {faulty->load_start, faulty->load_end}}}},
                     {"coordinator_relative", relative},
                     {"outside", outside},
                     {"difference_pp", diff_pp},
                     {"productive_delta_s", productive_delta}});
  }
  out["pairs"] = pairs;
  out["config"] = {{"workers", config.workers},
                   {"step_ms", config.step_ms},
                   {"steps", config.steps},
                   {"checkpoint_every", config.checkpoint_every},
                   {"worker_kill_every_s", config.worker_kill_every_s},
                   {"chief_kill_at", config.chief_kill_at}};
  if (!config.json_path.empty() && !WriteJsonFile(config.json_path, out, "tj-bench-goodput")) {
    return 1;
  }
  return 0;
}

}  // namespace tj::bench
