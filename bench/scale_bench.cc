// tj-bench-scale: issue [scale] item 6. A job of real processes (tj-bench-scale-job: tj-train's
// roles and training loop) with a dense variable and an embedding table of dim 16 on 4 PS and 2
// workers, every figure against a baseline measured in the same run:
//   - step time against the bytes a step moves, vs iperf3 loopback (one stream);
//   - the first (full) checkpoint vs `dd conv=fsync` copying its bytes; the restore after a PS is
//     SIGKILLed vs `dd` read of the same bytes, both with their files evicted from the page cache;
//   - the checkpoint after steps that changed 1 % of the rows (and not the dense variable) vs the
//     full one, with TJ_CHECKPOINT_FULL_EVERY set: "not available" when the runtime wrote it full;
//   - peak RSS (VmHWM) of every process vs its share of the model;
//   - ps-1 SIGKILLed just after the second checkpoint: the coordinator exits with the restart code,
//     ps-1 and the coordinator are restarted (the cold restore above), and the job must end at
//     exactly its step count.
// Steps: [0, K) dense + sparse, checkpoint K (full); [K, 2K) sparse only, checkpoint 2K; kill;
// [2K, 3K) dense + sparse after the restore, final checkpoint 3K.
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/synchronization/mutex.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "bench/baselines.h"
#include "bench/bench_support.h"
#include "bench/train_job.h"

#ifndef TJ_SCALE_JOB_BINARY
#define TJ_SCALE_JOB_BINARY ""
#endif
#ifndef TJ_BENCH_BUILD_TYPE
#define TJ_BENCH_BUILD_TYPE ""
#endif

namespace tj::bench {
namespace {

using json = nlohmann::json;
constexpr double kMiB = 1 << 20;
constexpr int64_t kColumns = 1024;  // tj-bench-scale-job's dense rows
constexpr int kRestartExitCode = 42;

struct Config {
  std::string job_binary = TJ_SCALE_JOB_BINARY;
  int64_t dense_mib = 2048;
  int64_t table_rows = 50'000'000;
  int dim = 16;
  int num_ps = 4;
  int workers = 2;
  int64_t interval = 3;  // K
  double changed_percent = 1.0;
  int iperf_seconds = 3;
  int slow_ms = 0;  // extra sleep of the steps after the second checkpoint (the smoke's are fast)
  int timeout_minutes = 60;
  std::string dir = "/var/tmp";
  bool keep = false;
  bool smoke = false;
  // Dense steps pull all, compute all, push all (the job's --streamed=false) instead of slice by
  // slice: the same-run baseline of the streamed step. Not passed otherwise, so that a job binary
  // from before the streamed step runs too (--job-binary).
  bool unstreamed = false;
  std::string json_path;
};

// The peak RSS of every process of the job, sampled from /proc while it runs (VmHWM only grows, so
// the last sample before a process exits is within a sampling period of its peak).
class RssSampler {
 public:
  RssSampler() : thread_([this] { Loop(); }) {}
  ~RssSampler() {
    stop_ = true;
    thread_.join();
  }
  void Track(const std::string& name, pid_t pid) {
    absl::MutexLock lock(&mu_);
    pids_[name] = pid;
  }
  std::map<std::string, int64_t> PeakKiB() {
    Sample();
    absl::MutexLock lock(&mu_);
    return peak_kib_;
  }

 private:
  static int64_t HwmKiB(pid_t pid) {
    std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmHWM:", 0) == 0) {
        int64_t kib = 0;
        std::istringstream(line.substr(6)) >> kib;
        return kib;
      }
    }
    return 0;
  }
  void Sample() {
    absl::MutexLock lock(&mu_);
    for (const auto& [name, pid] : pids_) {
      peak_kib_[name] = std::max(peak_kib_[name], HwmKiB(pid));
    }
  }
  void Loop() {
    while (!stop_) {
      Sample();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  absl::Mutex mu_;
  std::map<std::string, pid_t> pids_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> peak_kib_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

struct StepLine {
  int64_t step = 0;
  int64_t bytes = 0;
  double seconds = 0;
  bool first = false;  // the worker's model's first dense step (it allocated its buffers)
};
struct SavedLine {
  int64_t bytes = 0;
  double seconds = 0;
  // The embedding tables' part (the coordinator's line since session 8; -1 before): their bytes on
  // every PS and the slowest PS's time from its first table record to its fsync.
  int64_t table_bytes = -1;
  double table_seconds = -1;
};

std::vector<StepLine> StepLines(const std::string& log) {
  // "first" since session 12; a job binary from before has none.
  static const std::regex re(R"(scale step (\d+): bytes (\d+) seconds ([0-9.]+)(?: first (\d))?)");
  std::vector<StepLine> lines;
  for (std::sregex_iterator it(log.begin(), log.end(), re), end; it != end; ++it) {
    lines.push_back({std::stoll((*it)[1]), std::stoll((*it)[2]), std::stod((*it)[3]),
                     (*it)[4].matched && (*it)[4] == "1"});
  }
  return lines;
}

double DurationSeconds(const std::string& text) {
  absl::Duration d;
  return absl::ParseDuration(text, &d) ? absl::ToDoubleSeconds(d) : -1;
}

std::map<int64_t, SavedLine> SavedLines(const std::string& log) {
  static const std::regex re(
      R"(saved: step (\d+), (\d+) bytes in ([0-9a-z.]+)(?: \(\d+ PS wrote deltas; embedding tables (\d+) bytes in ([0-9a-z.]+))?)");
  std::map<int64_t, SavedLine> saved;
  for (std::sregex_iterator it(log.begin(), log.end(), re), end; it != end; ++it) {
    SavedLine& line = saved[std::stoll((*it)[1])];
    line = {std::stoll((*it)[2]), DurationSeconds((*it)[3])};
    if ((*it)[4].matched) {
      line.table_bytes = std::stoll((*it)[4]);
      line.table_seconds = DurationSeconds((*it)[5]);
    }
  }
  return saved;
}

// Every file a restore of checkpoint `step` reads, by its manifest (its own shards and the earlier
// files of its chain): their bytes in all, or -1 when the manifest does not read.
int64_t RestoreChainBytes(const std::string& checkpoint_root, int64_t step) {
  std::ifstream in(absl::StrFormat("%s/ckpt-%012d/MANIFEST.json", checkpoint_root, step));
  const json manifest = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!manifest.is_object() || !manifest.contains("shards")) return -1;
  int64_t bytes = 0;
  for (const json& shard : manifest["shards"]) bytes += shard.value("bytes", int64_t{0});
  return bytes;
}

// The duration of the last "restored ... in <d>" line of a PS log, or -1.
double RestoreSeconds(const std::string& log) {
  static const std::regex re(R"(: restored .* in ([0-9a-z.]+))");
  double seconds = -1;
  for (std::sregex_iterator it(log.begin(), log.end(), re), end; it != end; ++it) {
    seconds = DurationSeconds((*it)[1]);
  }
  return seconds;
}

std::vector<int64_t> DenseBytesPerTask(const std::string& log) {
  static const std::regex re(R"(dense bytes per PS task: ([0-9,]+))");
  std::smatch m;
  std::vector<int64_t> bytes;
  if (!std::regex_search(log, m, re)) return bytes;
  for (absl::string_view part : absl::StrSplit(std::string(m[1]), ',')) {
    int64_t v = 0;
    if (absl::SimpleAtoi(part, &v)) bytes.push_back(v);
  }
  return bytes;
}

// Checkpoint `step`'s own shard files one after another in `out`, synced (so its writeback does
// not overlap the baseline) and left in the page cache: the bytes the dd write baseline copies.
// Zeros would not do: this VM's disk writes them 2-3x faster than other bytes.
bool CopyShardsInto(const std::string& checkpoint_root, int64_t step, const std::string& out) {
  const std::string dir = absl::StrFormat("%s/ckpt-%012d", checkpoint_root, step);
  std::ofstream sink(out, std::ios::binary | std::ios::trunc);
  std::error_code ec;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".state") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    sink << in.rdbuf();
    ++files;
  }
  sink.close();
  if (files == 0 || !sink) return false;
  const int fd = ::open(out.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  return synced;
}

// Waits until `needle` appears in the log of `name`, or `name` exits, or the timeout.
bool WaitForLog(const TrainJob& job, const std::string& name, const std::string& needle,
                absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (job.Log(name).find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::string Ratio(double value, double goal, bool at_most = false) {
  const bool met = at_most ? value <= goal : value >= goal;
  return absl::StrCat(absl::StrFormat("%.1f%%", 100 * value), met ? " MET" : " MISSED",
                      absl::StrFormat(" (goal %s %.0f%%)", at_most ? "<=" : ">=", 100 * goal));
}

int Run(Config c) {
  if (c.smoke) {
    c.dense_mib = 4;
    c.table_rows = 20000;
    c.interval = 2;
    c.iperf_seconds = 1;
    c.slow_ms = 300;
    c.timeout_minutes = 4;
  }
  auto fail = [](const std::string& what) {
    std::fprintf(stderr, "tj-bench-scale: %s\n", what.c_str());
    return 1;
  };
  if (access(c.job_binary.c_str(), X_OK) != 0) {
    return fail(absl::StrCat(c.job_binary, " is not executable (build tj-bench-scale-job)"));
  }
  const int64_t k = c.interval;
  const int64_t total_steps = 3 * k;
  const int64_t dense_rows = (c.dense_mib << 20) / (kColumns * 4);
  const int64_t dense_bytes = dense_rows * kColumns * 4;
  const auto changed_rows = static_cast<int64_t>(
      std::ceil(static_cast<double>(c.table_rows) * c.changed_percent / 100.0));
  const int64_t rows_per_step = std::max<int64_t>(1, changed_rows / k);
  const int64_t table_bytes = c.table_rows * c.dim * 4;
  json machine = MachineDescription();
  machine["build_type"] = TJ_BENCH_BUILD_TYPE;
  std::printf(
      "Scale (tj-bench-scale): %d PS, %d workers; dense [%lld, %lld] float32 = %.1f MiB, table "
      "%lld rows x %d = %.1f MiB (raw); %.1f MiB of parameters; %d CPUs, load %s\n",
      c.num_ps, c.workers, static_cast<long long>(dense_rows), static_cast<long long>(kColumns),
      dense_bytes / kMiB, static_cast<long long>(c.table_rows), c.dim, table_bytes / kMiB,
      (dense_bytes + table_bytes) / kMiB, machine["nproc"].get<int>(), LoadAverage().c_str());
  std::printf("  job %s%s\n", c.job_binary.c_str(),
              c.unstreamed ? " --streamed=false (pull all, compute, push all)" : "");
  std::printf("  steps %lld (checkpoint every %lld), %lld rows per step (%.2f%% of the rows per "
              "checkpoint interval)\n\n",
              static_cast<long long>(total_steps), static_cast<long long>(k),
              static_cast<long long>(rows_per_step),
              100.0 * static_cast<double>(rows_per_step * k) / static_cast<double>(c.table_rows));
  std::fflush(stdout);

  const IperfResult iperf = RunIperf(c.iperf_seconds);

  auto created = TrainJob::Create({.train_binary = c.job_binary,
                                   .parent_dir = c.dir,
                                   .name = "tj-bench-scale",
                                   .workers = c.workers,
                                   .num_ps = c.num_ps,
                                   .keep = c.keep});
  if (!created.ok()) return fail(created.status().ToString());
  TrainJob& job = **created;
  job.env()["TJ_CHECKPOINT_INTERVAL_STEPS"] = absl::StrCat(k);
  job.env()["TJ_CHECKPOINT_KEEP"] = "3";
  // Incremental checkpoints where the runtime has them: one full base, then deltas.
  job.env()["TJ_CHECKPOINT_FULL_EVERY"] = "1000";
  std::vector<std::string> chief_args = {
      absl::StrCat("--dense-rows=", dense_rows),    absl::StrCat("--table-rows=", c.table_rows),
      absl::StrCat("--dim=", c.dim),                absl::StrCat("--steps=", total_steps),
      absl::StrCat("--rows-per-step=", rows_per_step), absl::StrCat("--sparse-only-from=", k),
      absl::StrCat("--sparse-only-to=", 2 * k),     absl::StrCat("--slow-from-step=", 2 * k),
      absl::StrCat("--slow-step-ms=", c.slow_ms)};
  if (c.unstreamed) chief_args.push_back("--streamed=false");
  RssSampler rss;
  auto track_all = [&] {
    for (int i = 0; i < c.num_ps; ++i) rss.Track(TrainJob::PsName(i), job.pid(TrainJob::PsName(i)));
    for (int i = 0; i < c.workers; ++i) {
      rss.Track(TrainJob::WorkerName(i), job.pid(TrainJob::WorkerName(i)));
    }
    rss.Track("chief", job.pid("chief"));
  };
  const absl::Duration timeout = absl::Minutes(c.timeout_minutes);
  if (absl::Status s = job.StartServers(); !s.ok()) return fail(s.ToString());
  if (absl::Status s = job.StartChief(chief_args); !s.ok()) return fail(s.ToString());
  track_all();

  // ps-1 is killed as soon as the second checkpoint is committed: the steps after it are running.
  const std::string second = absl::StrCat("saved: step ", 2 * k, ",");
  if (!WaitForLog(job, "chief", second, timeout)) {
    return fail(absl::StrCat("no checkpoint at step ", 2 * k, "; chief log:\n",
                             job.LogTail("chief")));
  }
  const std::string killed_ps = TrainJob::PsName(std::min(1, c.num_ps - 1));
  // The peaks of the training steps and the two checkpoints, before the restore adds its own.
  const std::map<std::string, int64_t> training_peak_kib = rss.PeakKiB();
  job.Kill(killed_ps);
  const std::optional<int> first_exit = job.WaitForExit("chief", timeout);
  const std::string first_log = job.Log("chief");
  if (first_exit != kRestartExitCode) {
    return fail(absl::StrCat("the coordinator exited ", first_exit.value_or(-1),
                             " after the PS was killed (expected the restart code ",
                             kRestartExitCode, "); log:\n", job.LogTail("chief")));
  }
  // The restore reads from the disk: every checkpoint file leaves the page cache.
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(job.dir() + "/checkpoints", ec)) {
    if (entry.is_regular_file(ec)) DropFromPageCache(entry.path().string());
  }
  if (absl::Status s = job.StartPs(std::min(1, c.num_ps - 1)); !s.ok()) return fail(s.ToString());
  // The PS's CPU while the coordinator restores (they do nothing else until it logs that it has):
  // what the restore costs them, whatever share of the 2 CPUs they got.
  std::vector<double> restore_cpu;
  std::vector<std::map<pid_t, ThreadSchedTimes>> threads_before;
  for (int i = 0; i < c.num_ps; ++i) {
    restore_cpu.push_back(-ProcessCpuSeconds(job.pid(TrainJob::PsName(i))));
    threads_before.push_back(ThreadSchedStats(job.pid(TrainJob::PsName(i))));
  }
  if (absl::Status s = job.StartChief(chief_args); !s.ok()) return fail(s.ToString());
  track_all();
  const size_t log_before = job.Log("chief").size();
  const absl::Time restore_deadline = absl::Now() + timeout;
  std::optional<int> final_exit;  // set here if the coordinator exits before it has restored
  while (job.Log("chief").find("restored checkpoint", log_before) == std::string::npos &&
         absl::Now() < restore_deadline &&
         !(final_exit = job.WaitForExit("chief", absl::ZeroDuration())).has_value()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  double restore_cpu_total = 0;
  std::vector<ThreadSchedTimes> restore_thread;  // per PS, its busiest thread: the restoring one
  for (int i = 0; i < c.num_ps; ++i) {
    restore_cpu[static_cast<size_t>(i)] += ProcessCpuSeconds(job.pid(TrainJob::PsName(i)));
    restore_thread.push_back(BusiestThreadBetween(
        threads_before[static_cast<size_t>(i)], ThreadSchedStats(job.pid(TrainJob::PsName(i)))));
    restore_cpu_total += restore_cpu[static_cast<size_t>(i)];
  }
  if (!final_exit.has_value()) final_exit = job.WaitForExit("chief", timeout);
  const std::map<std::string, int64_t> peak_kib = rss.PeakKiB();
  const std::string log = job.Log("chief");
  if (final_exit != 0) {
    return fail(absl::StrCat("the restarted coordinator exited ", final_exit.value_or(-1),
                             "; log:\n", job.LogTail("chief")));
  }
  const std::optional<TrainProgress> progress = job.ReadProgress();
  std::vector<double> restore_s;
  for (int i = 0; i < c.num_ps; ++i) restore_s.push_back(RestoreSeconds(job.Log(TrainJob::PsName(i))));

  // Baselines on the same disk, with the checkpoint's bytes.
  // The chief's log is appended across its restarts: `log` holds both runs.
  std::map<int64_t, SavedLine> saved = SavedLines(log);
  if (!saved.contains(k) || !saved.contains(2 * k)) return fail("checkpoint lines missing");
  const SavedLine full = saved[k];
  const SavedLine delta = saved[2 * k];
  const int64_t dd_mib = (full.bytes + (int64_t{1} << 20) - 1) >> 20;
  const std::string dd_path = job.dir() + "/dd.bin";
  const std::string dd_source = job.dir() + "/dd-source.bin";
  if (!CopyShardsInto(job.dir() + "/checkpoints", k, dd_source)) {
    return fail(absl::StrCat("cannot copy checkpoint ", k, "'s shards into ", dd_source));
  }
  std::vector<double> dd_write, dd_read;
  for (int rep = 0; rep < 2; ++rep) {
    std::filesystem::remove(dd_path, ec);
    auto w = DdCopy(dd_source, dd_path);
    if (!w.ok()) return fail(w.status().ToString());
    dd_write.push_back(*w);
    DropFromPageCache(dd_path);
    auto r = DdRead(dd_path);
    if (!r.ok()) return fail(r.status().ToString());
    dd_read.push_back(*r);
  }
  std::filesystem::remove(dd_path, ec);
  std::filesystem::remove(dd_source, ec);
  const double dd_write_mib_s = dd_mib / Median(dd_write);
  const double dd_read_mib_s = dd_mib / Median(dd_read);

  // Steps.
  std::vector<double> dense_s, sparse_s, later_s;
  int64_t dense_step_bytes = 0, sparse_step_bytes = 0;
  for (const StepLine& s : StepLines(log)) {
    const bool dense = s.step < k || s.step >= 2 * k;
    (dense ? dense_s : sparse_s).push_back(s.seconds);
    (dense ? dense_step_bytes : sparse_step_bytes) = s.bytes;
    if (dense && !s.first) later_s.push_back(s.seconds);
  }
  const double step_s = Median(dense_s);
  const double worker_mib_s = step_s > 0 ? dense_step_bytes / kMiB / step_s : 0;
  const double all_mib_s = worker_mib_s * c.workers;

  std::printf("Steps (dense + sparse, median over %zu; each worker runs one step at a time)\n",
              dense_s.size());
  std::printf("  bytes moved per step       %10.1f MiB (dense pull + push %.1f MiB, rows %.2f MiB)\n",
              dense_step_bytes / kMiB, 2 * dense_bytes / kMiB,
              (dense_step_bytes - 2 * dense_bytes) / kMiB);
  std::printf("  step time                  %10.3f s   (sparse-only steps: %.3f s)\n", step_s,
              Median(sparse_s));
  if (!later_s.empty() && later_s.size() < dense_s.size()) {
    std::printf("  without each model's first (%zu of %zu; a first allocates the model's values and "
                "gradient, and may run alone):\n                             %10.3f s\n",
                dense_s.size() - later_s.size(), dense_s.size(), Median(later_s));
  }
  std::printf("  per worker                 %10.1f MiB/s\n", worker_mib_s);
  std::printf("  %d workers together        %10.1f MiB/s\n", c.workers, all_mib_s);
  std::printf("  iperf3 loopback, 1 stream  %10.1f MiB/s %s\n", iperf.mib_per_second(),
              iperf.available ? "(baseline)" : iperf.note.c_str());
  std::printf("\nCheckpoint write (the first, full: %d shards written at once)\n", c.num_ps);
  std::printf("  checkpoint                 %10.1f MiB in %.3f s = %.1f MiB/s\n", full.bytes / kMiB,
              full.seconds, full.bytes / kMiB / full.seconds);
  std::printf("  dd conv=fsync of its bytes %10lld MiB in %.3f s = %.1f MiB/s (median of 2; baseline)\n",
              static_cast<long long>(dd_mib), Median(dd_write), dd_write_mib_s);
  const double restore_wall = *std::max_element(restore_s.begin(), restore_s.end());
  // A delta's restore reads the full save and every delta before it too.
  SavedLine restored_ckpt = saved[2 * k];
  if (const int64_t chain = RestoreChainBytes(job.dir() + "/checkpoints", 2 * k); chain > 0) {
    restored_ckpt.bytes = chain;
  }
  std::printf("\nRestore (checkpoint %lld into all %d PS after %s was SIGKILLed; files evicted from "
              "the page cache first)\n",
              static_cast<long long>(2 * k), c.num_ps, killed_ps.c_str());
  std::printf("  restore (every file of the chain; slowest PS's time)\n"
              "                             %10.1f MiB in %.3f s = %.1f MiB/s\n",
              restored_ckpt.bytes / kMiB, restore_wall, restored_ckpt.bytes / kMiB / restore_wall);
  std::printf("  dd read, cold (baseline)   %10lld MiB in %.3f s = %.1f MiB/s (median of 2)\n",
              static_cast<long long>(dd_mib), Median(dd_read), dd_read_mib_s);
  // With the 2 CPUs to themselves the PS would restore in about their CPU time / nproc.
  const double cpu_bound_s = restore_cpu_total / machine["nproc"].get<int>();
  std::printf("  PS CPU for the restore     %10.3f s in all (%.0f MiB per CPU-second); with every "
              "CPU free: ~%.3f s = %.0f%% of dd\n",
              restore_cpu_total, restored_ckpt.bytes / kMiB / restore_cpu_total, cpu_bound_s,
              100 * (restored_ckpt.bytes / kMiB / std::max(cpu_bound_s, Median(dd_read))) /
                  dd_read_mib_s);
  // Where the slowest PS's restore went: on a CPU, waiting for one (the load), the rest waiting
  // for the disk (or idle between the coordinator's restart and its call).
  const size_t slowest = static_cast<size_t>(
      std::max_element(restore_s.begin(), restore_s.end()) - restore_s.begin());
  const ThreadSchedTimes& busiest = restore_thread[slowest];
  std::printf("  slowest PS (%s), its restoring thread: %.3f s on a CPU, %.3f s runnable waiting "
              "for one (the load); of a %.3f s restore\n",
              TrainJob::PsName(static_cast<int>(slowest)).c_str(), busiest.on_cpu_s,
              busiest.waiting_s, restore_wall);
  const bool incremental = delta.bytes * 2 < full.bytes;
  std::printf("\nIncremental checkpoint (%lld sparse-only steps changed %.2f%% of the rows)\n",
              static_cast<long long>(k),
              100.0 * static_cast<double>(rows_per_step * k) / static_cast<double>(c.table_rows));
  std::printf("  full (step %lld)            %10.1f MiB in %.3f s\n", static_cast<long long>(k),
              full.bytes / kMiB, full.seconds);
  std::printf("  next (step %lld)            %10.1f MiB in %.3f s%s\n",
              static_cast<long long>(2 * k), delta.bytes / kMiB, delta.seconds,
              incremental ? "" : "  -> incremental checkpoints: not available (written full)");
  std::printf("  whole checkpoint, next/full: %.1f%% of the bytes, %.1f%% of the time\n",
              100.0 * static_cast<double>(delta.bytes) / static_cast<double>(full.bytes),
              100 * delta.seconds / full.seconds);
  // The embedding tables alone (item 5's subject): their records in both checkpoints, timed on
  // each PS from its first table record to its fsync (the slowest PS).
  const bool tables_timed = full.table_seconds > 0 && delta.table_seconds >= 0;
  if (tables_timed) {
    std::printf("  embedding tables, full      %10.1f MiB in %.3f s (slowest PS: first table record "
                "to fsync)\n",
                full.table_bytes / kMiB, full.table_seconds);
    std::printf("  embedding tables, next      %10.1f MiB in %.3f s\n", delta.table_bytes / kMiB,
                delta.table_seconds);
    std::printf("  embedding tables, next/full: %.1f%% of the bytes, %.1f%% of the time\n",
                100.0 * static_cast<double>(delta.table_bytes) /
                    static_cast<double>(full.table_bytes),
                100 * delta.table_seconds / full.table_seconds);
  }
  std::printf("\nPeak RSS (VmHWM) per process vs its share of the model: while training (steps "
              "and checkpoints until the kill), then over the whole run (with the restore)\n");
  const std::vector<int64_t> per_task = DenseBytesPerTask(first_log);
  json rss_json = json::object();
  for (const auto& [name, kib] : peak_kib) {
    double share = 0;
    std::string what;
    if (name.rfind("ps-", 0) == 0) {
      const size_t task = std::stoul(name.substr(3));
      share = (task < per_task.size() ? per_task[task] : 0) +
              static_cast<double>(table_bytes) / c.num_ps;
      what = "its dense slices + 1/num_ps of the table";
    } else if (name.rfind("worker-", 0) == 0) {
      share = static_cast<double>(dense_bytes);
      what = "the dense variable (values + gradient: 2x expected)";
    }
    const double mib = kib / 1024.0;
    const auto training = training_peak_kib.find(name);
    const double training_mib = training == training_peak_kib.end() ? 0 : training->second / 1024.0;
    std::printf("  %-9s training %9.1f MiB, whole run %9.1f MiB", name.c_str(), training_mib, mib);
    if (share > 0) {
      std::printf("   share %8.1f MiB   x%.2f / x%.2f  (%s)", share / kMiB,
                  training_mib * kMiB / share, mib * kMiB / share, what.c_str());
    }
    std::printf("\n");
    rss_json[name] = {
        {"peak_mib", mib}, {"training_peak_mib", training_mib}, {"share_mib", share / kMiB}};
  }
  const int64_t final_step = progress.has_value() ? progress->step : -1;
  const bool exact = final_step == total_steps &&
                     log.find(absl::StrCat("final: ", total_steps, " steps")) != std::string::npos;
  std::printf("\nPS SIGKILLed mid-run: %s killed after checkpoint %lld; the coordinator exited %d "
              "(restart code); restarted, it restored step %lld and ended at step %lld of %lld: "
              "%s\n",
              killed_ps.c_str(), static_cast<long long>(2 * k), *first_exit,
              static_cast<long long>(progress.has_value() && progress->restored_from_step
                                         ? *progress->restored_from_step
                                         : -1),
              static_cast<long long>(final_step), static_cast<long long>(total_steps),
              exact ? "EXACT" : "WRONG");

  const double step_ratio = iperf.available ? all_mib_s / iperf.mib_per_second() : 0;
  const double write_ratio = (full.bytes / kMiB / full.seconds) / dd_write_mib_s;
  const double restore_ratio = (restored_ckpt.bytes / kMiB / restore_wall) / dd_read_mib_s;
  std::printf("\nTargets\n");
  std::printf("  step bytes/s (both workers) vs iperf3: %s\n",
              iperf.available ? Ratio(step_ratio, 0.5).c_str() : "iperf3 unavailable");
  std::printf("  checkpoint write vs dd conv=fsync:     %s\n", Ratio(write_ratio, 0.5).c_str());
  std::printf("  restore vs dd read (cold):             %s\n", Ratio(restore_ratio, 0.5).c_str());
  std::printf("  incremental vs full checkpoint time:   %s\n",
              incremental ? Ratio(delta.seconds / full.seconds, 0.1, true).c_str()
                          : "not available (the runtime wrote a full checkpoint)");
  std::printf("    embedding tables alone:              %s\n",
              incremental && tables_timed
                  ? Ratio(delta.table_seconds / full.table_seconds, 0.1, true).c_str()
                  : "not measured");
  std::printf("  PS killed mid-run, exact step count:   %s\n", exact ? "MET" : "MISSED");
  std::fflush(stdout);

  if (!c.json_path.empty()) {
    json out = {
        {"benchmark", "tj-bench-scale"},
        {"machine", machine},
        {"config",
         {{"dense_bytes", dense_bytes}, {"table_rows", c.table_rows}, {"dim", c.dim},
          {"num_ps", c.num_ps}, {"workers", c.workers}, {"interval", k},
          {"rows_per_step", rows_per_step}, {"smoke", c.smoke}, {"unstreamed", c.unstreamed}}},
        {"steps",
         {{"dense_step_bytes", dense_step_bytes}, {"dense_step_s", dense_s},
          {"sparse_step_s", sparse_s}, {"later_dense_step_s", later_s},
          {"workers_mib_s", all_mib_s},
          {"iperf3_mib_s", iperf.mib_per_second()}, {"ratio", step_ratio}}},
        {"checkpoint",
         {{"full_bytes", full.bytes}, {"full_s", full.seconds}, {"dd_write_s", dd_write},
          {"dd_mib", dd_mib}, {"ratio", write_ratio}}},
        {"restore",
         {{"bytes", restored_ckpt.bytes}, {"checkpoint_own_bytes", delta.bytes}, {"ps_s", restore_s}, {"dd_read_s", dd_read},
          {"ps_cpu_s", restore_cpu}, {"slowest_thread_cpu_s", busiest.on_cpu_s},
          {"slowest_thread_waiting_s", busiest.waiting_s},
          {"ratio", restore_ratio}}},
        {"incremental",
         {{"available", incremental}, {"bytes", delta.bytes}, {"s", delta.seconds},
          {"ratio", delta.seconds / full.seconds}, {"full_table_bytes", full.table_bytes},
          {"full_table_s", full.table_seconds}, {"table_bytes", delta.table_bytes},
          {"table_s", delta.table_seconds},
          {"table_ratio", tables_timed ? delta.table_seconds / full.table_seconds : -1}}},
        {"rss", rss_json},
        {"ps_kill", {{"first_exit", *first_exit}, {"final_step", final_step}, {"exact", exact}}},
    };
    if (!WriteJsonFile(c.json_path, out, "tj-bench-scale")) return 1;
  }
  return exact ? 0 : 1;
}

}  // namespace
}  // namespace tj::bench

int main(int argc, char** argv) {
  tj::bench::Config config;
  CLI::App app{"tj-bench-scale: a job of 4 PS and 2 workers with a large dense variable and a "
               "large table, against iperf3 and dd measured in the same run"};
  app.add_option("--job-binary", config.job_binary)->capture_default_str();
  app.add_option("--dense-mib", config.dense_mib)->capture_default_str();
  app.add_option("--table-rows", config.table_rows)->capture_default_str();
  app.add_option("--dim", config.dim)->capture_default_str();
  app.add_option("--ps", config.num_ps)->capture_default_str();
  app.add_option("--workers", config.workers)->capture_default_str();
  app.add_option("--interval", config.interval, "steps between checkpoints (K)")
      ->capture_default_str();
  app.add_option("--changed-percent", config.changed_percent,
                 "rows the K sparse-only steps change, in % of the table")
      ->capture_default_str();
  app.add_option("--iperf-seconds", config.iperf_seconds)->capture_default_str();
  app.add_option("--slow-step-ms", config.slow_ms, "sleep of each step after the kill point")
      ->capture_default_str();
  app.add_option("--timeout-minutes", config.timeout_minutes)->capture_default_str();
  app.add_option("--dir", config.dir, "where the job's directory is made")->capture_default_str();
  app.add_flag("--keep", config.keep, "keep the job's directory (logs, checkpoints)");
  app.add_flag("--smoke", config.smoke, "seconds: a tiny model, figures not meaningful");
  app.add_flag("--unstreamed", config.unstreamed,
               "dense steps pull all, compute, then push all (the baseline of the streamed step)");
  app.add_option("--json", config.json_path);
  CLI11_PARSE(app, argc, argv);
  return tj::bench::Run(config);
}
