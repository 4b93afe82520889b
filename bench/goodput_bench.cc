// tj-bench-goodput: training throughput of a real tj-train job (1 PS, 4 workers, coordinator, on
// 127.0.0.1) while a worker is preempted every N seconds and restarted as the operator restarts a
// pod, against the same job with no faults measured in the same run. Absolute numbers mean little
// on a shared machine; the ratio is the result:
//   goodput / expected, expected = (fault-free steps/s per worker) x (time-weighted live workers).
// A preemption is either a notice (CoordinationClient::SendPreemptionNotice for the worker, as
// the operator sends for a pod with a DisruptionTarget and `tjctl preempt` sends, then SIGTERM
// after the grace period, SIGKILL 30 s later) or a SIGKILL with no notice (a lost machine). The
// worker is started again at the same address with the same TF_CONFIG once its process has exited:
// at once (the operator creates a replacement pod) or after tjctl run's restart backoff.
// Every run is a fresh job in a fresh directory. Prints a table to stdout and, with --json, writes
// the figures and the machine description.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_support.h"
#include "bench/goodput_accounting.h"
#include "bench/train_job.h"
#include "coordinator/coordination/coordination_client.h"
#include "tjctl/local/restart_backoff.h"

#ifndef TJ_TRAIN_BINARY
#define TJ_TRAIN_BINARY ""
#endif
#ifndef TJ_BENCH_BUILD_TYPE
#define TJ_BENCH_BUILD_TYPE ""
#endif

namespace tj::bench {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

// Target of the [bench] issue, item 5.
constexpr double kTargetRatio = 0.90;

double SecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Config {
  std::string train_binary = TJ_TRAIN_BINARY;
  std::string data = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
  std::string dir = "/var/tmp";
  int workers = 4;
  int step_ms = 50;                // --step-sleep-ms of the job
  double seconds = 60;             // measured window of every run
  double warmup_seconds = 3;       // after the first step, before the window
  std::string intervals = "10,5";  // N: seconds between two preemptions
  std::string modes = "notice,kill";
  double grace_seconds = 0;           // notice -> SIGTERM
  std::string restart = "immediate";  // immediate | tjctl
  bool fewer_workers_baseline = true;
  bool keep = false;
  std::string json_path;
  bool quick = false;
};

enum class FaultKind { kNone, kNotice, kKill };

std::string KindName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kNone:
      return "none";
    case FaultKind::kNotice:
      return "notice";
    case FaultKind::kKill:
      return "kill";
  }
  return "?";
}
std::string KindLabel(FaultKind kind) {
  switch (kind) {
    case FaultKind::kNone:
      return "no faults";
    case FaultKind::kNotice:
      return "notice + SIGTERM";
    case FaultKind::kKill:
      return "SIGKILL";
  }
  return "?";
}

// One preemption, timed from outside (the benchmark's clock) and from the logs (their stamps).
struct FaultRecord {
  int worker = -1;
  double at_s = 0;     // since the window started
  double exit_s = -1;  // fault -> the process exited (SIGKILL: reaped at once)
  int exit_code = -1;
  double restart_delay_s = 0;  // exit -> replacement started (0: at once; tjctl: its backoff)
  double serving_s = -1;       // replacement started -> "serving on" in its log
  double rejoined_s = -1;      // replacement started -> the coordinator saw its new incarnation
  double ready_s = -1;         // replacement started -> "trainer ready" (its per-worker resource)
  int64_t put_back = -1;       // closures the coordinator put back (its log)
  double down_s = 0;           // fault -> replacement started (not live)
  // Worker-seconds lost to it, within this run: the steps expected in the min(2 s, N/2) after it
  // (the run's own rate per live worker-second between preemptions, times the live worker-seconds)
  // minus the steps reported, times one step.
  double lost_in_run_s = std::numeric_limits<double>::quiet_NaN();
  // Kept for the log lookups once the run is over.
  absl::Time fault_wall;
  absl::Time restart_wall;
  bool restarted = false;
};

struct RunResult {
  std::string label;
  FaultKind kind = FaultKind::kNone;
  double interval_s = 0;
  int workers = 0;
  double window_s = 0;
  int64_t steps = 0;
  double steps_per_s = 0;
  double live_worker_s = 0;  // worker-seconds of live workers in the window
  double mean_live = 0;      // live_worker_s / window_s
  std::vector<FaultRecord> faults;
  std::string load_start;
  std::string load_end;
  // Filled once the fault-free throughput is known.
  double expected_steps_per_s = 0;
  double ratio = 0;          // steps_per_s / expected
  double vs_fault_free = 0;  // steps_per_s / fault-free
  double lost_worker_s_per_fault = 0;
  double fault_free = 0;    // mean of the fault-free runs just before and just after this one
  double ratio_in_run = 0;  // steps_per_s / (rate_between_faults per worker x live workers)
  // Worker connections the coordinator added beyond one per worker address (its log: "coordinator:
  // worker N at A added"). More than one connection to a worker process lets it run closures of
  // both at once: the job then is not the job of `workers` workers that the ratios assume.
  int extra_connections = 0;
  // The job's rate away from preemptions (from 2 s after each one to the next), within this run,
  // per live worker-second, times the workers.
  double rate_between_faults = 0;
};

std::vector<std::string> TrainArgs(const Config& config) {
  return {"--model=softmax", "--data=" + config.data, "--steps=100000000",
          absl::StrCat("--step-sleep-ms=", config.step_ms), "--log-every-steps=1"};
}

// A worker's process as the benchmark sees it.
struct WorkerSlot {
  enum class Phase { kLive, kTerminating, kDown } phase = Phase::kLive;
  Clock::time_point started;                                          // this incarnation
  std::vector<std::pair<Clock::time_point, Clock::time_point>> live;  // closed live intervals
  std::optional<Clock::time_point> sigterm_at;                        // notice: when SIGTERM is due
  std::optional<Clock::time_point> sigkill_at;  // after SIGTERM: when SIGKILL is due
  Clock::time_point restart_at;
  int fault = -1;  // index into RunResult::faults while down
  local::RestartBackoff backoff;
};

// The number in the first line of `log` stamped in [after, before) that contains `who` and
// matches `pattern` (its first group); -1 if there is none.
int64_t CountInLog(const std::string& log, const std::string& who, const std::string& pattern,
                   absl::Time after, absl::Time before) {
  const std::regex re(pattern);
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(who) == std::string::npos) continue;
    std::smatch m;
    if (!std::regex_search(line, m, re)) continue;
    auto stamped = LogLineAfter(line, who, after);  // the line's own stamp, if at or after `after`
    if (!stamped.has_value()) continue;
    if (stamped->at >= before) return -1;
    return std::stoll(m[1].str());
  }
  return -1;
}

absl::StatusOr<RunResult> MeasureRun(const Config& config, int workers, FaultKind kind,
                                     double interval_s, const std::string& label) {
  RunResult r;
  r.label = label;
  r.kind = kind;
  r.interval_s = interval_s;
  r.workers = workers;
  r.load_start = LoadAverage();
  auto created = TrainJob::Create(
      TrainJobOptions{.train_binary = config.train_binary,
                      .parent_dir = config.dir,
                      .name = absl::StrCat("tj-bench-goodput-", workers, "w-", KindName(kind)),
                      .workers = workers,
                      .keep = config.keep});
  if (!created.ok()) return created.status();
  TrainJob& job = **created;
  const auto job_started = Clock::now();
  if (absl::Status s = job.StartServers(); !s.ok()) return s;
  if (absl::Status s = job.StartChief(TrainArgs(config)); !s.ok()) return s;
  auto first = WaitForProgress(
      job, [](const TrainProgress& p) { return p.step >= 1; }, absl::Minutes(3), "the first step");
  if (!first.ok()) return first.status();
  std::this_thread::sleep_for(
      std::chrono::microseconds(static_cast<int64_t>(config.warmup_seconds * 1e6)));
  // The window starts when a step is reported, so that it begins and ends on a report.
  const int64_t warm_step = job.ReadProgress().value_or(first->progress).step;
  auto start = WaitForProgress(
      job, [&](const TrainProgress& p) { return p.step > warm_step; }, absl::Minutes(1),
      "a step after the warm-up");
  if (!start.ok()) return start.status();
  const Clock::time_point t0 = start->at;
  const int64_t s0 = start->progress.step;
  const Clock::time_point end =
      t0 + std::chrono::microseconds(static_cast<int64_t>(config.seconds * 1e6));

  // Preemptions at t0 + k N for k = 1, 2, ... while k N < window: the last one is N before the end,
  // so every run ends the same way, a full interval after a fault.
  std::vector<Clock::time_point> fault_times;
  if (kind != FaultKind::kNone) {
    for (int k = 1; k * interval_s < config.seconds - 1e-9; ++k) {
      fault_times.push_back(t0 +
                            std::chrono::microseconds(static_cast<int64_t>(k * interval_s * 1e6)));
    }
  }
  std::vector<WorkerSlot> slots(static_cast<size_t>(workers));
  for (WorkerSlot& slot : slots) slot.started = job_started;
  std::vector<Clock::time_point> live_since(static_cast<size_t>(workers), job_started);
  const bool tjctl_restart = config.restart == "tjctl";

  size_t next_fault = 0;
  int next_victim = 0;
  std::vector<std::pair<double, int64_t>> samples = {{0.0, s0}};  // (since t0, step) at each change
  int64_t last_step = s0;
  Clock::time_point last_step_at = t0;
  while (true) {
    const auto now = Clock::now();
    if (now >= end) break;
    if (auto p = job.ReadProgress(); p.has_value() && p->step > last_step) {
      last_step = p->step;
      samples.emplace_back(SecondsBetween(t0, now), last_step);
      last_step_at = now;
    }
    // A preemption is due: the next live worker in turn.
    if (next_fault < fault_times.size() && now >= fault_times[next_fault]) {
      ++next_fault;
      int victim = -1;
      for (int k = 0; k < workers && victim < 0; ++k) {
        const int candidate = (next_victim + k) % workers;
        if (slots[static_cast<size_t>(candidate)].phase == WorkerSlot::Phase::kLive) {
          victim = candidate;
        }
      }
      if (victim >= 0) {
        next_victim = (victim + 1) % workers;
        WorkerSlot& slot = slots[static_cast<size_t>(victim)];
        FaultRecord f;
        f.worker = victim;
        f.at_s = SecondsBetween(t0, now);
        f.fault_wall = absl::Now();
        slot.live.emplace_back(live_since[static_cast<size_t>(victim)], now);
        slot.fault = static_cast<int>(r.faults.size());
        const std::string name = TrainJob::WorkerName(victim);
        if (kind == FaultKind::kKill) {
          job.Kill(name);
          const auto exited = Clock::now();
          f.exit_s = SecondsBetween(now, exited);
          f.exit_code = 128 + SIGKILL;
          slot.phase = WorkerSlot::Phase::kDown;
          const absl::Duration delay =
              tjctl_restart ? slot.backoff.Next(absl::FromChrono(exited - slot.started))
                            : absl::ZeroDuration();
          f.restart_delay_s = absl::ToDoubleSeconds(delay);
          slot.restart_at = exited + absl::ToChronoNanoseconds(delay);
        } else {
          CoordinationClient coordination(job.chief_address(), absl::Seconds(5));
          const absl::Duration grace = absl::Seconds(config.grace_seconds);
          auto response = coordination.SendPreemptionNotice(MakeTaskId("worker", victim), "bench",
                                                            absl::Now() + grace);
          if (!response.ok()) return response.status();
          if (!response->accepted()) {
            return absl::InternalError(
                absl::StrCat("worker ", victim, " notice refused: ", response->decision()));
          }
          slot.phase = WorkerSlot::Phase::kTerminating;
          slot.sigterm_at = now + absl::ToChronoNanoseconds(grace);
        }
        r.faults.push_back(f);
      }
    }
    for (int i = 0; i < workers; ++i) {
      WorkerSlot& slot = slots[static_cast<size_t>(i)];
      const std::string name = TrainJob::WorkerName(i);
      if (slot.phase == WorkerSlot::Phase::kTerminating) {
        const auto t = Clock::now();
        if (slot.sigterm_at.has_value() && t >= *slot.sigterm_at) {
          job.Signal(name, SIGTERM);
          slot.sigterm_at.reset();
          slot.sigkill_at = t + std::chrono::seconds(30);
        }
        if (slot.sigkill_at.has_value() && t >= *slot.sigkill_at) {
          job.Signal(name, SIGKILL);
          slot.sigkill_at.reset();
        }
        if (auto code = job.WaitForExit(name, absl::ZeroDuration()); code.has_value()) {
          const auto exited = Clock::now();
          FaultRecord& f = r.faults[static_cast<size_t>(slot.fault)];
          f.exit_code = *code;
          f.exit_s = SecondsBetween(t0, exited) - f.at_s;
          slot.phase = WorkerSlot::Phase::kDown;
          const absl::Duration delay =
              tjctl_restart ? slot.backoff.Next(absl::FromChrono(exited - slot.started))
                            : absl::ZeroDuration();
          f.restart_delay_s = absl::ToDoubleSeconds(delay);
          slot.restart_at = exited + absl::ToChronoNanoseconds(delay);
        }
      }
      if (slot.phase == WorkerSlot::Phase::kDown && Clock::now() >= slot.restart_at) {
        FaultRecord& f = r.faults[static_cast<size_t>(slot.fault)];
        f.restart_wall = absl::Now();
        const auto restarted = Clock::now();
        if (absl::Status s = job.StartWorker(i); !s.ok()) return s;
        f.restarted = true;
        f.down_s = SecondsBetween(t0, restarted) - f.at_s;
        slot.phase = WorkerSlot::Phase::kLive;
        slot.started = restarted;
        live_since[static_cast<size_t>(i)] = restarted;
        slot.fault = -1;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // The window: t0 (step s0 first seen) to the last step report seen before the end.
  const Clock::time_point t1 = last_step_at;
  r.window_s = SecondsBetween(t0, t1);
  r.steps = last_step - s0;
  if (r.window_s <= 0 || r.steps <= 0) {
    return absl::InternalError(
        absl::StrCat(label, ": no steps in the window; chief log:\n", job.LogTail("chief")));
  }
  r.steps_per_s = static_cast<double>(r.steps) / r.window_s;
  for (int i = 0; i < workers; ++i) {
    WorkerSlot& slot = slots[static_cast<size_t>(i)];
    if (slot.phase == WorkerSlot::Phase::kLive) {
      slot.live.emplace_back(live_since[static_cast<size_t>(i)], t1);
    }
    for (const auto& [from, to] : slot.live) {
      const auto a = std::max(from, t0);
      const auto b = std::min(to, t1);
      if (b > a) r.live_worker_s += SecondsBetween(a, b);
    }
  }
  r.mean_live = r.live_worker_s / r.window_s;

  // What the logs say about each preemption.
  const std::string chief_log = job.Log("chief");
  {
    static const std::regex added_re(R"(coordinator: worker \d+ at (\S+) added)");
    std::map<std::string, int> added;
    for (auto it = std::sregex_iterator(chief_log.begin(), chief_log.end(), added_re);
         it != std::sregex_iterator(); ++it) {
      ++added[(*it)[1].str()];
    }
    for (const auto& [address, n] : added) r.extra_connections += n - 1;
  }
  for (size_t i = 0; i < r.faults.size(); ++i) {
    FaultRecord& f = r.faults[i];
    const std::string who =
        absl::StrCat("worker ", f.worker, " (", job.worker_address(f.worker), ")");
    const absl::Time before =
        i + 1 < r.faults.size() ? r.faults[i + 1].fault_wall : absl::InfiniteFuture();
    // SIGKILL: the stream breaks and the coordinator puts back what the worker held. Notice: what
    // was still running at the deadline is cancelled and put back (nothing logged: none was).
    f.put_back = kind == FaultKind::kKill
                     ? CountInLog(chief_log, who + ": ", R"(putting back (\d+) unanswered)",
                                  f.fault_wall, before)
                     : CountInLog(chief_log, who + ": ",
                                  R"((\d+) closure\(s\) still running at the preemption)",
                                  f.fault_wall, before);
    if (kind == FaultKind::kNotice && f.put_back < 0) f.put_back = 0;
    if (!f.restarted) continue;
    const std::string worker_log = job.Log(TrainJob::WorkerName(f.worker));
    if (auto t = LogTimeOf(worker_log, "serving on", f.restart_wall); t.has_value()) {
      f.serving_s = absl::ToDoubleSeconds(*t - f.restart_wall);
    }
    if (auto t = LogTimeOf(worker_log, "trainer ready", f.restart_wall); t.has_value()) {
      f.ready_s = absl::ToDoubleSeconds(*t - f.restart_wall);
    }
    if (auto t = LogTimeOf(chief_log, who + " restarted (incarnation", f.restart_wall);
        t.has_value()) {
      f.rejoined_s = absl::ToDoubleSeconds(*t - f.restart_wall);
    }
  }
  // Steps lost to each preemption, within the run: no other run's rate is involved, so the drift
  // of the machine's load between runs does not enter. Rates are per live worker-second, so
  // workers still down between preemptions (tjctl's backoff) are accounted for.
  if (!r.faults.empty()) {
    const double post = std::min(2.0, interval_s / 2);
    auto step_at = [&](double t) {  // the step reported at time t (since t0)
      auto it = std::upper_bound(samples.begin(), samples.end(), std::make_pair(t, INT64_MAX));
      return it == samples.begin() ? s0 : std::prev(it)->second;
    };
    auto live_ws = [&](double a, double b) {  // live worker-seconds in [a, b] (since t0)
      double sum = 0;
      for (const WorkerSlot& slot : slots) {
        for (const auto& [from, to] : slot.live) {
          const double x = std::max(a, SecondsBetween(t0, from));
          const double y = std::min(b, SecondsBetween(t0, to));
          if (y > x) sum += y - x;
        }
      }
      return sum;
    };
    double steps = static_cast<double>(step_at(r.faults[0].at_s) - s0);
    double worker_s = live_ws(0, r.faults[0].at_s);
    for (size_t i = 0; i < r.faults.size(); ++i) {
      const double from = r.faults[i].at_s + post;
      const double to = i + 1 < r.faults.size() ? r.faults[i + 1].at_s : r.window_s;
      if (to > from) {
        steps += static_cast<double>(step_at(to) - step_at(from));
        worker_s += live_ws(from, to);
      }
    }
    const double per_worker_rate = worker_s > 0 ? steps / worker_s : 0;
    r.rate_between_faults = per_worker_rate * workers;
    for (FaultRecord& f : r.faults) {
      if (per_worker_rate <= 0 || f.at_s + post > r.window_s) continue;
      const double expected = per_worker_rate * live_ws(f.at_s, f.at_s + post);
      const double got = static_cast<double>(step_at(f.at_s + post) - step_at(f.at_s));
      f.lost_in_run_s = (expected - got) / per_worker_rate;
    }
  }
  r.load_end = LoadAverage();
  return r;
}

// ---------------------------------------------------------------------------------------------
// Output.

struct Stat {
  double median = 0, min = 0, max = 0;
  size_t n = 0;
};
// `v` without the values not measured: NaN, and negative ones unless `negatives_valid`.
Stat StatOf(std::vector<double> v, bool negatives_valid = false) {
  std::erase_if(v, [&](double x) { return std::isnan(x) || (!negatives_valid && x < 0); });
  if (v.empty()) return {};
  return {Median(v), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()),
          v.size()};
}
json ToJson(const Stat& s) {
  return {{"median", s.median}, {"min", s.min}, {"max", s.max}, {"n", s.n}};
}
template <typename T>
Stat FaultStat(const RunResult& r, T FaultRecord::*field, bool negatives_valid = false) {
  std::vector<double> v;
  for (const FaultRecord& f : r.faults) v.push_back(static_cast<double>(f.*field));
  return StatOf(v, negatives_valid);
}
Stat LostInRun(const RunResult& r) { return FaultStat(r, &FaultRecord::lost_in_run_s, true); }

json RunJson(const RunResult& r) {
  json faults = json::array();
  for (const FaultRecord& f : r.faults) {
    faults.push_back({{"worker", f.worker},
                      {"at_s", f.at_s},
                      {"exit_s", f.exit_s},
                      {"exit_code", f.exit_code},
                      {"restart_delay_s", f.restart_delay_s},
                      {"serving_s", f.serving_s},
                      {"rejoined_s", f.rejoined_s},
                      {"ready_s", f.ready_s},
                      {"put_back", f.put_back},
                      {"down_s", f.down_s},
                      {"lost_in_run_worker_s", f.lost_in_run_s}});
  }
  json out = {{"label", r.label},
              {"fault", KindName(r.kind)},
              {"interval_s", r.interval_s},
              {"workers", r.workers},
              {"window_s", r.window_s},
              {"steps", r.steps},
              {"steps_per_s", r.steps_per_s},
              {"live_worker_s", r.live_worker_s},
              {"mean_live_workers", r.mean_live},
              {"extra_worker_connections", r.extra_connections},
              {"loadavg_start", r.load_start},
              {"loadavg_end", r.load_end}};
  if (r.kind != FaultKind::kNone) {
    out["fault_free_steps_per_s"] = r.fault_free;
    out["expected_steps_per_s"] = r.expected_steps_per_s;
    out["goodput_vs_expected_in_run"] = r.ratio_in_run;
    out["goodput_vs_expected"] = r.ratio;
    out["goodput_vs_fault_free"] = r.vs_fault_free;
    out["lost_worker_s_per_fault"] = r.lost_worker_s_per_fault;
    out["rate_between_faults"] = r.rate_between_faults;
    out["lost_in_run_worker_s"] = ToJson(LostInRun(r));
    out["exit_s"] = ToJson(FaultStat(r, &FaultRecord::exit_s));
    out["serving_s"] = ToJson(FaultStat(r, &FaultRecord::serving_s));
    out["rejoined_s"] = ToJson(FaultStat(r, &FaultRecord::rejoined_s));
    out["ready_s"] = ToJson(FaultStat(r, &FaultRecord::ready_s));
    out["put_back"] = ToJson(FaultStat(r, &FaultRecord::put_back));
    out["faults"] = faults;
  }
  return out;
}

std::string Ms(const Stat& s) {
  if (s.n == 0) return absl::StrFormat("%8s", "-");
  return absl::StrFormat("%8.0f", 1e3 * s.median);
}

absl::StatusOr<std::vector<double>> ParseIntervals(const std::string& text) {
  std::vector<double> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    double v = 0;
    if (!absl::SimpleAtod(part, &v) || !(v > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--intervals: '", std::string(part), "' is not a positive number"));
    }
    out.push_back(v);
  }
  if (out.empty()) return absl::InvalidArgumentError("--intervals is empty");
  return out;
}

absl::StatusOr<std::vector<FaultKind>> ParseModes(const std::string& text) {
  std::vector<FaultKind> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    if (part == "notice") {
      out.push_back(FaultKind::kNotice);
    } else if (part == "kill") {
      out.push_back(FaultKind::kKill);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--modes: '", std::string(part), "' is not notice or kill"));
    }
  }
  if (out.empty()) return absl::InvalidArgumentError("--modes is empty");
  return out;
}

int Run(Config config) {
  if (config.quick) {
    config.seconds = std::min(config.seconds, 4.0);
    config.warmup_seconds = std::min(config.warmup_seconds, 1.0);
    config.intervals = "2";
    config.fewer_workers_baseline = false;
  }
  auto fail = [](const std::string& what, const absl::Status& s) {
    std::fprintf(stderr, "tj-bench-goodput: %s: %s\n", what.c_str(), s.ToString().c_str());
    return 1;
  };
  auto intervals = ParseIntervals(config.intervals);
  if (!intervals.ok()) return fail("flags", intervals.status());
  auto modes = ParseModes(config.modes);
  if (!modes.ok()) return fail("flags", modes.status());
  for (double n : *intervals) {
    if (n >= config.seconds) {
      return fail("flags", absl::InvalidArgumentError(
                               absl::StrCat("--intervals: ", n, " s leaves no preemption in a ",
                                            config.seconds, " s window (--seconds)")));
    }
  }
  if (!TrainJobInputsPresent("tj-bench-goodput", config.train_binary, config.data)) return 1;
  const json machine = MachineDescription();
  std::printf(
      "tj-bench-goodput: tj-train jobs of 1 PS + %d workers + coordinator on 127.0.0.1, "
      "digits softmax, step sleep %d ms, %.0f s windows, a fresh job per run; "
      "preempted workers restarted %s\n",
      config.workers, config.step_ms, config.seconds,
      config.restart == "tjctl" ? "after tjctl run's backoff" : "at once");
  std::printf("machine: %d CPUs, %s, load %s; build %s\n\n", machine["nproc"].get<int>(),
              machine["cpu_model"].get<std::string>().c_str(),
              machine["loadavg_at_start"].get<std::string>().c_str(), TJ_BENCH_BUILD_TYPE);
  std::fflush(stdout);

  // The fewer-workers run, then fault-free runs alternating with the faulty ones (B F B F ... B),
  // so that each faulty run has a fault-free run just before and just after it: the load of a
  // shared machine drifts by several per cent over minutes.
  std::optional<RunResult> fewer;
  if (config.fewer_workers_baseline) {
    auto r = MeasureRun(config, config.workers - 1, FaultKind::kNone, 0,
                        absl::StrCat(config.workers - 1, " workers, no faults"));
    if (!r.ok()) return fail("fault-free run with fewer workers", r.status());
    fewer = *r;
  }
  std::vector<RunResult> baselines;
  auto baseline = [&]() -> absl::Status {
    auto r = MeasureRun(
        config, config.workers, FaultKind::kNone, 0,
        absl::StrCat(config.workers, " workers, no faults (#", baselines.size() + 1, ")"));
    if (!r.ok()) return r.status();
    baselines.push_back(*r);
    std::printf("  measured: %-36s %7.2f steps/s (load %s)\n", r->label.c_str(), r->steps_per_s,
                r->load_end.c_str());
    std::fflush(stdout);
    return absl::OkStatus();
  };
  if (absl::Status s = baseline(); !s.ok()) return fail("fault-free run", s);
  std::vector<RunResult> faulty;
  for (double n : *intervals) {
    for (FaultKind kind : *modes) {
      auto r = MeasureRun(config, config.workers, kind, n,
                          absl::StrCat("every ", n, " s: ", KindLabel(kind)));
      if (!r.ok()) return fail(absl::StrCat(KindName(kind), " every ", n, " s"), r.status());
      faulty.push_back(*r);
      std::printf("  measured: %-36s %7.2f steps/s, %.3f live workers (load %s)\n",
                  r->label.c_str(), r->steps_per_s, r->mean_live, r->load_end.c_str());
      std::fflush(stdout);
      if (absl::Status s = baseline(); !s.ok()) return fail("fault-free run", s);
    }
  }
  double fault_free = 0;
  for (const RunResult& b : baselines) fault_free += b.steps_per_s;
  fault_free /= static_cast<double>(baselines.size());
  const double per_worker = fault_free / config.workers;
  const double step_s = 1.0 / per_worker;  // one step on one worker, all included
  for (size_t k = 0; k < faulty.size(); ++k) {
    RunResult& r = faulty[k];
    r.fault_free = (baselines[k].steps_per_s + baselines[k + 1].steps_per_s) / 2;
    r.expected_steps_per_s = r.fault_free / config.workers * r.mean_live;
    r.ratio = r.steps_per_s / r.expected_steps_per_s;
    r.vs_fault_free = r.steps_per_s / r.fault_free;
    const double lost_steps = (r.expected_steps_per_s - r.steps_per_s) * r.window_s;
    r.lost_worker_s_per_fault = r.faults.empty() ? 0
                                                 : lost_steps * config.workers / r.fault_free /
                                                       static_cast<double>(r.faults.size());
    if (r.rate_between_faults > 0) {
      r.ratio_in_run = r.steps_per_s / (r.rate_between_faults / config.workers * r.mean_live);
    }
  }

  std::printf("\nFault-free baselines (same run), steps/s over the window\n");
  std::printf("  %-40s %8s %8s %9s %13s  %s\n", "run", "window s", "steps", "steps/s",
              "live workers", "load (start -> end)");
  auto print_baseline = [](const RunResult& r) {
    std::printf("  %-40s %8.1f %8lld %9.2f %13.2f  %s -> %s\n", r.label.c_str(), r.window_s,
                static_cast<long long>(r.steps), r.steps_per_s, r.mean_live, r.load_start.c_str(),
                r.load_end.c_str());
  };
  for (const RunResult& b : baselines) print_baseline(b);
  if (fewer.has_value()) print_baseline(*fewer);
  double slowest = baselines[0].steps_per_s, fastest = baselines[0].steps_per_s;
  for (const RunResult& b : baselines) {
    slowest = std::min(slowest, b.steps_per_s);
    fastest = std::max(fastest, b.steps_per_s);
  }
  std::printf(
      "  fault-free mean %.2f steps/s (%.2f per worker: one step %.1f ms); fastest / slowest "
      "%.3f (the machine's drift between runs)\n",
      fault_free, per_worker, 1e3 * step_s, fastest / slowest);
  double scaling = 0;
  if (fewer.has_value()) {
    scaling = fewer->steps_per_s / (per_worker * fewer->workers);
    std::printf(
        "  scaling check: %d workers / (%d x per-worker fault-free) = %.3f (1.0: throughput "
        "is proportional to workers)\n",
        fewer->workers, fewer->workers, scaling);
  }

  std::printf(
      "\nGoodput under preemption: a worker preempted every N s in turn, restarted %s; "
      "expected = fault-free per worker (the runs just before and after) x time-weighted live "
      "workers\n",
      config.restart == "tjctl" ? "after tjctl's backoff" : "at once");
  std::printf("  %-5s %-17s %6s %9s %13s %11s %9s %17s %18s %13s\n", "N s", "preemption", "faults",
              "steps/s", "live workers", "fault-free", "expected", "goodput/expected",
              "goodput/fault-free", "in-run ratio");
  for (const RunResult& r : faulty) {
    std::printf("  %-5g %-17s %6zu %9.2f %13.3f %11.2f %9.2f %17.3f %18.3f %13.3f\n", r.interval_s,
                KindLabel(r.kind).c_str(), r.faults.size(), r.steps_per_s, r.mean_live,
                r.fault_free, r.expected_steps_per_s, r.ratio, r.vs_fault_free, r.ratio_in_run);
  }
  for (const RunResult& r : faulty) {
    if (r.extra_connections == 0) continue;
    std::printf(
        "  INVALID every %g s, %s: the coordinator added %d worker connection(s) to addresses it "
        "already had (its log: \"coordinator: worker N at A added\" twice for an address), so "
        "workers ran closures of two connections at once\n",
        r.interval_s, KindLabel(r.kind).c_str(), r.extra_connections);
  }
  std::printf(
      "  (in-run ratio: against the same run's rate between preemptions, from 2 s (N/2 if less) "
      "after each to the next, instead of the fault-free runs: free of the drift between runs, "
      "blind to effects lasting over 2 s)\n");
  std::printf(
      "\nPer preemption (median over the run), ms; restart = the replacement process "
      "started\n");
  std::printf("  %-5s %-17s %11s %14s %17s %18s %15s %9s %14s %14s\n", "N s", "preemption",
              "fault->exit", "exit->restart", "restart->serving", "restart->rejoined",
              "restart->ready", "put back", "lost w-s, run", "lost w-s, runs");
  for (const RunResult& r : faulty) {
    const Stat put_back = FaultStat(r, &FaultRecord::put_back);
    const Stat lost = LostInRun(r);
    std::printf("  %-5g %-17s %11s %14s %17s %18s %15s %9.0f %14.3f %14.3f\n", r.interval_s,
                KindLabel(r.kind).c_str(), Ms(FaultStat(r, &FaultRecord::exit_s)).c_str(),
                Ms(FaultStat(r, &FaultRecord::restart_delay_s)).c_str(),
                Ms(FaultStat(r, &FaultRecord::serving_s)).c_str(),
                Ms(FaultStat(r, &FaultRecord::rejoined_s)).c_str(),
                Ms(FaultStat(r, &FaultRecord::ready_s)).c_str(), put_back.median, lost.median,
                r.lost_worker_s_per_fault);
  }
  std::printf(
      "  (serving: the replacement's \"serving on\" log line; rejoined: the coordinator's "
      "\"restarted (incarnation\"; ready: its trainer resource built. Worker-seconds lost per "
      "preemption: \"run\": steps expected in the %g s after it at the same run's rate between "
      "preemptions minus steps reported, median; \"runs\": (expected - measured steps) over the "
      "window against the fault-free runs, per preemption. One step is %.1f ms of one worker.)\n",
      std::min(2.0, (*intervals)[0] / 2), 1e3 * step_s);

  json targets = json::array();
  std::printf("\nTargets\n");
  for (const RunResult& r : faulty) {
    const bool valid = r.extra_connections == 0;
    const bool met = r.ratio >= kTargetRatio;
    std::printf(
        "  goodput >= %.0f%% of fault-free scaled by live workers, every %g s, %s: %s "
        "(%.3f; in-run %.3f)\n",
        100 * kTargetRatio, r.interval_s, KindLabel(r.kind).c_str(),
        !valid ? "NOT JUDGED (duplicate worker connections)"
        : met  ? "MET"
               : "MISSED",
        r.ratio, r.ratio_in_run);
    json t = {{"name", absl::StrCat("goodput_every_", r.interval_s, "s_", KindName(r.kind))},
              {"target", kTargetRatio},
              {"ratio", r.ratio},
              {"ratio_in_run", r.ratio_in_run},
              {"met", met}};
    if (!valid) {
      t["met"] = nullptr;
      t["invalid"] = absl::StrCat(r.extra_connections, " duplicate worker connection(s)");
    }
    targets.push_back(t);
  }
  if (config.quick) std::printf("  (--quick: seconds-long runs; not meaningful)\n");

  if (!config.json_path.empty()) {
    json out;
    out["benchmark"] = "goodput";
    out["machine"] = machine;
    out["machine"]["loadavg_at_end"] = LoadAverage();
    out["config"] = {{"workers", config.workers},
                     {"step_sleep_ms", config.step_ms},
                     {"window_s", config.seconds},
                     {"warmup_s", config.warmup_seconds},
                     {"intervals", config.intervals},
                     {"modes", config.modes},
                     {"grace_s", config.grace_seconds},
                     {"restart", config.restart},
                     {"data", config.data},
                     {"dir", config.dir},
                     {"quick", config.quick},
                     {"build_type", TJ_BENCH_BUILD_TYPE}};
    json base = json::array();
    for (const RunResult& b : baselines) base.push_back(RunJson(b));
    out["fault_free"] = base;
    out["fault_free_mean_steps_per_s"] = fault_free;
    out["fault_free_fastest_over_slowest"] = fastest / slowest;
    if (fewer.has_value()) {
      out["fewer_workers"] = RunJson(*fewer);
      out["scaling_check"] = scaling;
    }
    json runs = json::array();
    for (const RunResult& r : faulty) runs.push_back(RunJson(r));
    out["preempted"] = runs;
    out["targets"] = targets;
    if (!WriteJsonFile(config.json_path, out, "tj-bench-goodput")) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace tj::bench

int main(int argc, char** argv) {
  tj::bench::Config config;
  CLI::App app{
      "tj-bench-goodput: training throughput of a real tj-train job with a worker preempted every "
      "N seconds, against the same job without faults, scaled by the live workers"};
  app.add_option("--workers", config.workers, "workers per job")->capture_default_str();
  app.add_option("--step-ms", config.step_ms, "--step-sleep-ms of the job")->capture_default_str();
  app.add_option("--seconds", config.seconds, "measured window of every run")
      ->capture_default_str();
  app.add_option("--warmup-seconds", config.warmup_seconds, "after the first step")
      ->capture_default_str();
  app.add_option("--intervals", config.intervals, "N: seconds between preemptions, comma-separated")
      ->capture_default_str();
  app.add_option("--modes", config.modes, "notice (notice, then SIGTERM) and/or kill (SIGKILL)")
      ->capture_default_str();
  app.add_option("--grace", config.grace_seconds, "seconds from a notice to its SIGTERM")
      ->capture_default_str();
  app.add_option("--restart", config.restart,
                 "immediate (the operator's new pod) or tjctl (tjctl run's restart backoff)")
      ->capture_default_str();
  app.add_option("--fewer-workers-baseline", config.fewer_workers_baseline,
                 "also run workers - 1 without faults (checks throughput ~ workers)")
      ->capture_default_str();
  app.add_option("--data", config.data, "the digits CSV")->capture_default_str();
  app.add_option("--dir", config.dir, "where job directories are made")->capture_default_str();
  app.add_flag("--keep", config.keep, "keep the job directories (every process's log)");
  app.add_option("--json", config.json_path, "write the results as JSON to this path");
  app.add_option("--train-binary", config.train_binary, "path to tj-train")->capture_default_str();
  app.add_flag("--quick,--smoke", config.quick,
               "seconds: 4 s windows, a preemption every 2 s, no fewer-workers run; checks that "
               "the benchmark runs, figures not meaningful");
  bool accounting = false;
  tj::bench::AccountingConfig accounting_config;
  app.add_flag("--accounting", accounting,
               "instead: the coordinator's goodput figure against goodput measured from outside "
               "(fault-free wall time over faulty wall time, same steps)");
  app.add_option("--accounting-steps", accounting_config.steps, "steps of each accounting run")
      ->capture_default_str();
  app.add_option("--accounting-runs", accounting_config.runs, "fault-free and faulty pairs")
      ->capture_default_str();
  app.add_option("--accounting-kill-every", accounting_config.worker_kill_every_s,
                 "seconds between two faults of the faulty accounting run")
      ->capture_default_str();
  app.add_option("--accounting-chief-kill-at", accounting_config.chief_kill_at,
                 "the fault (1-based) that kills the coordinator instead of a worker; 0: none")
      ->capture_default_str();
  app.add_option("--accounting-checkpoint-every", accounting_config.checkpoint_every,
                 "TJ_CHECKPOINT_INTERVAL_STEPS of the accounting runs")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  if (accounting) {
    accounting_config.train_binary = config.train_binary;
    accounting_config.data = config.data;
    accounting_config.dir = config.dir;
    accounting_config.workers = config.workers;
    accounting_config.keep = config.keep;
    accounting_config.json_path = config.json_path;
    if (app.count("--step-ms") > 0) accounting_config.step_ms = config.step_ms;
    if (config.quick) {
      accounting_config.steps = std::min<int64_t>(accounting_config.steps, 600);
      accounting_config.worker_kill_every_s = std::min(accounting_config.worker_kill_every_s, 2.0);
      accounting_config.checkpoint_every = std::min<int64_t>(accounting_config.checkpoint_every, 200);
    }
    if (accounting_config.steps < 1 || accounting_config.runs < 1 ||
        !(accounting_config.worker_kill_every_s > 0) || accounting_config.checkpoint_every < 0) {
      std::fprintf(stderr, "tj-bench-goodput: --accounting-steps >= 1, --accounting-runs >= 1, "
                           "--accounting-kill-every > 0, --accounting-checkpoint-every >= 0\n");
      return 2;
    }
    spdlog::set_level(spdlog::level::warn);
    return tj::bench::RunAccounting(accounting_config);
  }
  if (config.workers < 2 || config.step_ms < 1 || !(config.seconds > 0) ||
      config.warmup_seconds < 0 || config.grace_seconds < 0 ||
      (config.restart != "immediate" && config.restart != "tjctl")) {
    std::fprintf(stderr,
                 "tj-bench-goodput: --workers >= 2, --step-ms >= 1, --seconds > 0, "
                 "--warmup-seconds >= 0, --grace >= 0, --restart immediate|tjctl\n");
    return 2;
  }
  spdlog::set_level(spdlog::level::warn);
  return tj::bench::Run(std::move(config));
}
