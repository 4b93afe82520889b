// tj-bench-dispatch: how fast the ClusterCoordinator dispatches closures to real tj-worker
// processes, next to baselines measured in the same run between the same processes (absolute
// numbers mean little on a shared machine; the ratios are the result):
//   - no-op closures/s over 1, 2, 4 workers (schedule N "noop", Join; best and median of 3 runs);
//   - lone-closure latency (Schedule one "noop", Fetch it, repeat), measured in alternating blocks
//     with raw unary and raw stream ping-pongs so that the three see the same machine load;
//   - raw gRPC baselines: unary Worker.Run ping-pong on one connection, RunStream ping-pong (one
//     run per message), RunStream with 256-run batches, unary over 8 connections from 8 threads.
// Prints a table to stdout and, with --json, writes the figures and the machine description.
#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "bench/bench_support.h"
#include "coordinator/base/channel.h"
#include "coordinator/cluster/cluster_coordinator.h"
#include "coordinator/cluster/schedule_args.h"
#include "tj/v1/worker.grpc.pb.h"

#ifndef TJ_WORKER_BINARY
#define TJ_WORKER_BINARY ""
#endif
#ifndef TJ_BENCH_BUILD_TYPE
#define TJ_BENCH_BUILD_TYPE ""
#endif

namespace tj::bench {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

// Targets of the [bench] issue.
constexpr double kTargetClosuresPerSecond4Workers = 50'000;
constexpr double kTargetLoneOverUnaryP50 = 1.2;
constexpr int kStreamBatch = 256;  // the coordinator's default max_inflight_per_worker
constexpr int kParallelConnections = 8;
constexpr int kLatencyBlock = 100;  // samples per block of the paired latency measurement

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
double MicrosSince(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

struct Config {
  std::string worker_binary = TJ_WORKER_BINARY;
  std::string workers_csv = "1,2,4";
  std::vector<int> worker_counts;
  int64_t closures = 200'000;
  double seconds = 10;  // per measured run: a run stops scheduling once this has passed
  int runs = 3;
  int64_t warmup = -1;  // closures before the measured runs; default min(N/4, 20000)
  int latency_iterations = 2000;
  int64_t baseline_calls = 20'000;
  std::string json_path;
  std::string worker_log;
  bool smoke = false;
  // TJ_BENCH_EXPERIMENT_NO_DEADLOCK_DETECTION: Abseil's mutex deadlock detection off in this
  // process, to measure its cost. Not for reported figures.
  bool experiment_no_deadlock_detection = false;
};

// CPU time used by the coordinator process (this one) and by the workers during a measurement.
class CpuMeter {
 public:
  explicit CpuMeter(std::vector<const WorkerProcess*> workers) : workers_(std::move(workers)) {
    self_ = SelfCpuSeconds();
    for (const auto* w : workers_) worker_ += w->CpuSeconds();
    segments_ = TcpOutSegments();
  }
  // TCP segments sent since construction; -1 if /proc/net/snmp is unreadable.
  double segments() const {
    const int64_t now = TcpOutSegments();
    return now < 0 || segments_ < 0 ? -1 : static_cast<double>(now - segments_);
  }
  double self_seconds() const { return SelfCpuSeconds() - self_; }
  double worker_seconds() const {
    double total = 0;
    for (const auto* w : workers_) total += w->CpuSeconds();
    return total - worker_;
  }

 private:
  std::vector<const WorkerProcess*> workers_;
  double self_ = 0;
  double worker_ = 0;
  int64_t segments_ = -1;
};

// The coordinator's defaults, except that a worker that dies fails the benchmark within 30 s
// instead of being waited for an hour. Nothing on the dispatch path changes.
CoordinatorOptions BenchOptions() {
  CoordinatorOptions options;
  options.worker_recovery_timeout = absl::Seconds(30);
  return options;
}

double PerOp(double total, int64_t ops) {
  return total < 0 || ops <= 0 ? -1 : total / static_cast<double>(ops);
}

// ---------------------------------------------------------------------------------------------
// Coordinator measurements.

struct ThroughputRun {
  int64_t closures = 0;
  double seconds = 0;
  double schedule_seconds = 0;  // time for the Schedule calls alone (the rest is waiting in Join)
  double rate = 0;
  double coordinator_cpu_us = 0;  // per closure
  double worker_cpu_us = 0;       // per closure, all workers together
  double tcp_segments = 0;        // per closure, indicative (see TcpOutSegments)
};

struct ThroughputRow {
  int workers = 0;
  std::vector<ThroughputRun> runs;
  double best = 0;
  double median = 0;
  double coordinator_cpu_us = 0;  // per closure, averaged over the measured runs
  double worker_cpu_us = 0;
  double tcp_segments = 0;
  std::vector<int> final_windows;
  std::vector<int64_t> completed_per_worker;
};

absl::StatusOr<ThroughputRun> RunNoops(ClusterCoordinator& coordinator, int64_t n, double budget_s,
                                       const std::vector<const WorkerProcess*>& workers) {
  CpuMeter cpu(workers);
  const auto start = Clock::now();
  int64_t scheduled = 0;
  for (; scheduled < n; ++scheduled) {
    if ((scheduled & 1023) == 1023 && SecondsSince(start) > budget_s) break;
    auto value = coordinator.Schedule("noop");
    if (!value.ok()) return value.status();
  }
  ThroughputRun run;
  run.schedule_seconds = SecondsSince(start);
  if (absl::Status joined = coordinator.Join(); !joined.ok()) return joined;
  run.seconds = SecondsSince(start);
  run.closures = scheduled;
  run.rate = static_cast<double>(scheduled) / run.seconds;
  run.coordinator_cpu_us = cpu.self_seconds() * 1e6 / static_cast<double>(scheduled);
  run.worker_cpu_us = cpu.worker_seconds() * 1e6 / static_cast<double>(scheduled);
  run.tcp_segments = PerOp(cpu.segments(), scheduled);
  return run;
}

absl::StatusOr<ThroughputRow> MeasureThroughput(const Config& config, int num_workers,
                                                const std::vector<const WorkerProcess*>& all) {
  std::vector<std::string> addresses;
  std::vector<const WorkerProcess*> used;
  for (int i = 0; i < num_workers; ++i) {
    used.push_back(all[static_cast<size_t>(i)]);
    addresses.push_back(all[static_cast<size_t>(i)]->address());
  }
  auto coordinator = ClusterCoordinator::Create(addresses, BenchOptions());
  if (!coordinator.ok()) return coordinator.status();
  // Warm-up: connections established, windows adapted, allocator and caches warm.
  const int64_t warmup =
      config.warmup >= 0 ? config.warmup : std::min<int64_t>(config.closures / 4, 20'000);
  if (warmup > 0) {
    auto w = RunNoops(**coordinator, warmup, config.seconds, used);
    if (!w.ok()) return w.status();
  }
  ThroughputRow row;
  row.workers = num_workers;
  std::vector<double> rates;
  for (int r = 0; r < config.runs; ++r) {
    auto run = RunNoops(**coordinator, config.closures, config.seconds, used);
    if (!run.ok()) return run.status();
    row.runs.push_back(*run);
    rates.push_back(run->rate);
    row.coordinator_cpu_us += run->coordinator_cpu_us / config.runs;
    row.worker_cpu_us += run->worker_cpu_us / config.runs;
    row.tcp_segments += run->tcp_segments / config.runs;
  }
  row.best = *std::max_element(rates.begin(), rates.end());
  row.median = Median(rates);
  for (const auto& stats : (*coordinator)->Workers()) {
    row.final_windows.push_back(stats.window);
    row.completed_per_worker.push_back(stats.completed);
  }
  return row;
}

// ---------------------------------------------------------------------------------------------
// Raw gRPC baselines, over channels built exactly as the coordinator builds them.

// One baseline measurement; BestOf keeps the fastest of several (as for the coordinator's runs).
struct Baseline {
  int64_t calls = 0;  // calls (or messages, or closures) completed
  double seconds = 0;
  double rate = 0;         // per second
  double median_rate = 0;  // over the runs BestOf made
  int runs = 1;
  LatencySummary latency;    // per call, when measured one at a time
  double client_cpu_us = 0;  // per call
  double worker_cpu_us = 0;  // per call
  double tcp_segments = 0;   // per call, indicative
};

// Measures a baseline `runs` times; the fastest run is reported (figures and latency), with the
// median rate. The coordinator's figures are best-of-runs too, so the ratios compare like with
// like.
absl::StatusOr<Baseline> BestOf(int runs,
                                const std::function<absl::StatusOr<Baseline>()>& measure) {
  std::optional<Baseline> best;
  std::vector<double> rates;
  for (int r = 0; r < runs; ++r) {
    auto b = measure();
    if (!b.ok()) return b.status();
    rates.push_back(b->rate);
    if (!best || b->rate > best->rate) best = *b;
  }
  best->median_rate = Median(rates);
  best->runs = runs;
  return *best;
}

v1::RunRequest NoopRequest(uint64_t id) {
  v1::RunRequest request;
  request.set_closure_id(id);
  request.set_function("noop");
  request.set_args(SerializeArgs("noop", {}).value_or(""));
  return request;
}

absl::Status CheckResult(const v1::RunResult& result) {
  if (result.failure() != v1::FAILURE_KIND_NONE) {
    return absl::InternalError(
        absl::StrCat("noop failed on the worker: ", result.status().message()));
  }
  return absl::OkStatus();
}

absl::Status UnaryCall(v1::Worker::Stub& stub, const v1::RunRequest& request) {
  grpc::ClientContext context;
  v1::RunResult result;
  const grpc::Status status = stub.Run(&context, request, &result);
  if (!status.ok())
    return absl::UnavailableError(absl::StrCat("Worker.Run: ", status.error_message()));
  return CheckResult(result);
}

absl::StatusOr<Baseline> UnaryPingPong(const Config& config, const WorkerProcess& worker) {
  auto stub = v1::Worker::NewStub(MakeRuntimeChannel(worker.address()));
  const v1::RunRequest request = NoopRequest(1);
  for (int i = 0; i < 200; ++i) {
    if (absl::Status s = UnaryCall(*stub, request); !s.ok()) return s;
  }
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(config.baseline_calls));
  CpuMeter cpu({&worker});
  const auto start = Clock::now();
  for (int64_t i = 0; i < config.baseline_calls; ++i) {
    if ((i & 255) == 255 && SecondsSince(start) > config.seconds) break;
    const auto t0 = Clock::now();
    if (absl::Status s = UnaryCall(*stub, request); !s.ok()) return s;
    samples.push_back(MicrosSince(t0));
  }
  Baseline b;
  b.seconds = SecondsSince(start);
  b.calls = static_cast<int64_t>(samples.size());
  b.rate = static_cast<double>(b.calls) / b.seconds;
  b.client_cpu_us = cpu.self_seconds() * 1e6 / static_cast<double>(b.calls);
  b.worker_cpu_us = cpu.worker_seconds() * 1e6 / static_cast<double>(b.calls);
  b.tcp_segments = PerOp(cpu.segments(), b.calls);
  b.latency = Summarize(std::move(samples));
  return b;
}

// One RunStream; each round sends one RunBatch of `batch` runs and reads ResultBatches until all
// `batch` results are back, for `total` runs in all (or the time budget). batch = 1 is the stream
// ping-pong.
absl::StatusOr<Baseline> StreamRounds(const Config& config, const WorkerProcess& worker, int batch,
                                      int64_t total) {
  auto stub = v1::Worker::NewStub(MakeRuntimeChannel(worker.address()));
  grpc::ClientContext context;
  auto stream = stub->RunStream(&context);
  v1::RunBatch request;
  for (int i = 0; i < batch; ++i) *request.add_runs() = NoopRequest(0);
  uint64_t next_id = 1;
  v1::ResultBatch results;
  auto round = [&]() -> absl::Status {
    for (auto& run : *request.mutable_runs()) run.set_closure_id(next_id++);
    if (!stream->Write(request)) return absl::UnavailableError("RunStream: write failed");
    int received = 0;
    while (received < batch) {
      if (!stream->Read(&results)) return absl::UnavailableError("RunStream: read failed");
      for (const auto& result : results.results()) {
        if (absl::Status s = CheckResult(result); !s.ok()) return s;
      }
      received += results.results_size();
    }
    return absl::OkStatus();
  };
  const int warmup_rounds = std::max(10, 200 / batch);
  for (int i = 0; i < warmup_rounds; ++i) {
    if (absl::Status s = round(); !s.ok()) return s;
  }
  const int64_t rounds = std::max<int64_t>(1, total / batch);
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(rounds));
  CpuMeter cpu({&worker});
  const auto start = Clock::now();
  for (int64_t i = 0; i < rounds; ++i) {
    if (i > 0 && SecondsSince(start) > config.seconds) break;
    const auto t0 = Clock::now();
    if (absl::Status s = round(); !s.ok()) return s;
    samples.push_back(MicrosSince(t0));
  }
  Baseline b;
  b.seconds = SecondsSince(start);
  b.calls = static_cast<int64_t>(samples.size()) * batch;
  b.rate = static_cast<double>(b.calls) / b.seconds;
  b.client_cpu_us = cpu.self_seconds() * 1e6 / static_cast<double>(b.calls);
  b.worker_cpu_us = cpu.worker_seconds() * 1e6 / static_cast<double>(b.calls);
  b.tcp_segments = PerOp(cpu.segments(), b.calls);
  b.latency = Summarize(std::move(samples));
  stream->WritesDone();
  const grpc::Status finished = stream->Finish();
  if (!finished.ok()) {
    return absl::UnavailableError(
        absl::StrCat("RunStream finished with ", finished.error_message()));
  }
  return b;
}

// Unary ping-pong from `connections` threads, each with its own connection (channel), spread
// round-robin over the workers.
absl::StatusOr<Baseline> UnaryParallel(const Config& config,
                                       const std::vector<const WorkerProcess*>& workers,
                                       int connections) {
  std::vector<std::unique_ptr<v1::Worker::Stub>> stubs;
  for (int i = 0; i < connections; ++i) {
    const auto* worker = workers[static_cast<size_t>(i) % workers.size()];
    stubs.push_back(v1::Worker::NewStub(MakeRuntimeChannel(worker->address())));
  }
  const v1::RunRequest request = NoopRequest(1);
  for (auto& stub : stubs) {
    for (int i = 0; i < 50; ++i) {
      if (absl::Status s = UnaryCall(*stub, request); !s.ok()) return s;
    }
  }
  const int64_t per_thread = std::max<int64_t>(1, config.baseline_calls / connections);
  std::vector<int64_t> done(static_cast<size_t>(connections), 0);
  std::vector<absl::Status> errors(static_cast<size_t>(connections));
  std::atomic<bool> go{false};
  CpuMeter cpu(workers);
  std::vector<std::thread> threads;
  for (int t = 0; t < connections; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      const auto start = Clock::now();
      for (int64_t i = 0; i < per_thread; ++i) {
        if ((i & 63) == 63 && SecondsSince(start) > config.seconds) break;
        absl::Status s = UnaryCall(*stubs[static_cast<size_t>(t)], request);
        if (!s.ok()) {
          errors[static_cast<size_t>(t)] = s;
          return;
        }
        ++done[static_cast<size_t>(t)];
      }
    });
  }
  const auto start = Clock::now();
  go.store(true);
  for (auto& thread : threads) thread.join();
  Baseline b;
  b.seconds = SecondsSince(start);
  for (const auto& e : errors) {
    if (!e.ok()) return e;
  }
  for (int64_t d : done) b.calls += d;
  b.rate = static_cast<double>(b.calls) / b.seconds;
  b.client_cpu_us = cpu.self_seconds() * 1e6 / static_cast<double>(b.calls);
  b.worker_cpu_us = cpu.worker_seconds() * 1e6 / static_cast<double>(b.calls);
  b.tcp_segments = PerOp(cpu.segments(), b.calls);
  return b;
}

// Lone-closure latency, paired with its baselines: one lone closure (Schedule + Fetch through a
// 1-worker coordinator), raw unary Worker.Run and raw RunStream ping-pong to the same worker,
// measured in alternating blocks so all three see the same machine load. On a shared machine this
// pairing is what makes the ratio meaningful.
int LatencyBlock(const Config& config) {
  return std::max(10, std::min(kLatencyBlock, config.latency_iterations / 4));
}

struct LatencyResult {
  LatencySummary lone;
  LatencySummary unary;
  LatencySummary stream;
  // The same lone closure and unary call, each in one long run of latency_iterations samples,
  // back to back: the other way to pair them, reported next to the blocks.
  LatencySummary lone_long;
  LatencySummary unary_long;
};

absl::StatusOr<LatencyResult> MeasureLatency(const Config& config, const WorkerProcess& worker) {
  auto coordinator =
      ClusterCoordinator::Create(std::vector<std::string>{worker.address()}, BenchOptions());
  if (!coordinator.ok()) return coordinator.status();
  auto unary_stub = v1::Worker::NewStub(MakeRuntimeChannel(worker.address()));
  auto stream_stub = v1::Worker::NewStub(MakeRuntimeChannel(worker.address()));
  grpc::ClientContext stream_context;
  auto stream = stream_stub->RunStream(&stream_context);
  const v1::RunRequest unary_request = NoopRequest(1);
  v1::RunBatch stream_request;
  *stream_request.add_runs() = NoopRequest(1);
  v1::ResultBatch stream_results;

  auto lone = [&]() -> absl::Status {
    auto value = (*coordinator)->Schedule("noop");
    if (!value.ok()) return value.status();
    auto fetched = Fetch(*value);
    return fetched.ok() ? absl::OkStatus() : fetched.status();
  };
  auto unary = [&]() { return UnaryCall(*unary_stub, unary_request); };
  auto stream_once = [&]() -> absl::Status {
    if (!stream->Write(stream_request)) return absl::UnavailableError("RunStream: write failed");
    if (!stream->Read(&stream_results) || stream_results.results_size() != 1) {
      return absl::UnavailableError("RunStream: read failed");
    }
    return CheckResult(stream_results.results(0));
  };
  const std::function<absl::Status()> kinds[3] = {lone, unary, stream_once};
  std::vector<double> samples[3];
  for (int i = 0; i < std::max(20, config.latency_iterations / 10); ++i) {
    for (const auto& kind : kinds) {
      if (absl::Status s = kind(); !s.ok()) return s;
    }
  }
  // Blocks of kLatencyBlock samples per kind, the kinds taking turns (the order rotates): each kind
  // runs hot within its block (as in a sequential loop), and load drift spreads over all three.
  // The first tenth of every block is not timed, so no kind pays for the previous one's cache
  // misses.
  const int block = LatencyBlock(config);
  const auto start = Clock::now();
  for (int b = 0; static_cast<int>(samples[0].size()) < config.latency_iterations; ++b) {
    if (b > 0 && SecondsSince(start) > config.seconds) break;
    for (int k = 0; k < 3; ++k) {
      const int kind = (b + k) % 3;
      for (int i = 0; i < block / 10; ++i) {
        if (absl::Status s = kinds[kind](); !s.ok()) return s;
      }
      for (int i = 0; i < block; ++i) {
        const auto t0 = Clock::now();
        if (absl::Status s = kinds[kind](); !s.ok()) return s;
        samples[kind].push_back(MicrosSince(t0));
      }
    }
  }
  stream->WritesDone();
  stream->Finish();
  auto long_run = [&](const std::function<absl::Status()>& kind) -> absl::StatusOr<LatencySummary> {
    for (int i = 0; i < 100; ++i) {
      if (absl::Status s = kind(); !s.ok()) return s;
    }
    std::vector<double> run;
    const auto run_start = Clock::now();
    for (int i = 0; i < config.latency_iterations; ++i) {
      if (i > 0 && SecondsSince(run_start) > config.seconds) break;
      const auto t0 = Clock::now();
      if (absl::Status s = kind(); !s.ok()) return s;
      run.push_back(MicrosSince(t0));
    }
    return Summarize(std::move(run));
  };
  auto lone_long = long_run(lone);
  if (!lone_long.ok()) return lone_long.status();
  auto unary_long = long_run(unary);
  if (!unary_long.ok()) return unary_long.status();
  return LatencyResult{Summarize(std::move(samples[0])), Summarize(std::move(samples[1])),
                       Summarize(std::move(samples[2])), *lone_long, *unary_long};
}

// ---------------------------------------------------------------------------------------------
// Reporting.

json ToJson(const Baseline& b, const std::string& unit, bool with_latency) {
  json j = {{"count", b.calls},
            {"seconds", b.seconds},
            {"rate_per_s", b.rate},
            {"median_rate_per_s", b.median_rate},
            {"runs", b.runs},
            {"unit", unit},
            {"client_cpu_us_per_op", b.client_cpu_us},
            {"worker_cpu_us_per_op", b.worker_cpu_us},
            {"tcp_segments_per_op", b.tcp_segments}};
  if (with_latency) j["latency"] = tj::bench::ToJson(b.latency);
  return j;
}

std::string Ratio(double a, double b) {
  if (b <= 0) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2fx", a / b);
  return buf;
}

std::string Rate(double r) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.0f", r);
  return buf;
}

absl::StatusOr<std::vector<int>> ParseWorkerCounts(const std::string& csv) {
  std::vector<int> counts;
  for (absl::string_view part : absl::StrSplit(csv, ',', absl::SkipWhitespace())) {
    int n = 0;
    if (!absl::SimpleAtoi(part, &n) || n < 1 || n > 64) {
      return absl::InvalidArgumentError(
          absl::StrCat("--workers: '", std::string(part), "' is not a worker count in 1..64"));
    }
    counts.push_back(n);
  }
  if (counts.empty()) return absl::InvalidArgumentError("--workers: no worker count given");
  return counts;
}

int Run(Config config) {
  if (config.smoke) {
    config.closures = std::min<int64_t>(config.closures, 3000);
    config.warmup = config.warmup >= 0 ? config.warmup : 500;
    config.latency_iterations = std::min(config.latency_iterations, 200);
    config.baseline_calls = std::min<int64_t>(config.baseline_calls, 1000);
    config.seconds = std::min(config.seconds, 3.0);
  }
  auto counts = ParseWorkerCounts(config.workers_csv);
  if (!counts.ok()) {
    std::fprintf(stderr, "tj-bench-dispatch: %s\n", counts.status().ToString().c_str());
    return 2;
  }
  config.worker_counts = *counts;
  if (config.worker_binary.empty()) {
    std::fprintf(stderr, "tj-bench-dispatch: pass --worker-binary (path to tj-worker)\n");
    return 2;
  }
  const int max_workers =
      std::max(*std::max_element(config.worker_counts.begin(), config.worker_counts.end()), 1);
  json machine = MachineDescription();
  machine["build_type"] = TJ_BENCH_BUILD_TYPE;

  std::vector<std::unique_ptr<WorkerProcess>> processes;
  std::vector<const WorkerProcess*> workers;
  for (int i = 0; i < max_workers; ++i) {
    auto worker = WorkerProcess::Start(config.worker_binary, i, config.worker_log);
    if (!worker.ok()) {
      std::fprintf(stderr, "tj-bench-dispatch: starting worker %d: %s\n", i,
                   worker.status().ToString().c_str());
      return 1;
    }
    workers.push_back(worker->get());
    processes.push_back(std::move(*worker));
  }
  auto fail = [](const std::string& what, const absl::Status& status) {
    std::fprintf(stderr, "tj-bench-dispatch: %s: %s\n", what.c_str(), status.ToString().c_str());
    return 1;
  };

  // Baselines first, then the coordinator, then the unary ping-pong again: the drift between the
  // two unary measurements says how much the machine's load changed during the run.
  auto unary = BestOf(config.runs, [&] { return UnaryPingPong(config, *workers[0]); });
  if (!unary.ok()) return fail("unary ping-pong", unary.status());
  auto stream_pp = BestOf(
      config.runs, [&] { return StreamRounds(config, *workers[0], 1, config.baseline_calls); });
  if (!stream_pp.ok()) return fail("stream ping-pong", stream_pp.status());
  auto stream_batched = BestOf(config.runs, [&] {
    return StreamRounds(config, *workers[0], kStreamBatch, config.closures);
  });
  if (!stream_batched.ok()) return fail("stream batches", stream_batched.status());
  auto parallel =
      BestOf(config.runs, [&] { return UnaryParallel(config, workers, kParallelConnections); });
  if (!parallel.ok()) return fail("unary over 8 connections", parallel.status());

  std::vector<ThroughputRow> rows;
  for (int n : config.worker_counts) {
    auto row = MeasureThroughput(config, n, workers);
    if (!row.ok()) return fail(absl::StrCat("throughput on ", n, " worker(s)"), row.status());
    rows.push_back(*row);
  }
  auto latency = MeasureLatency(config, *workers[0]);
  if (!latency.ok()) return fail("lone-closure latency", latency.status());
  const LatencySummary* lone = &latency->lone;
  auto unary_end = BestOf(config.runs, [&] { return UnaryPingPong(config, *workers[0]); });
  if (!unary_end.ok()) return fail("unary ping-pong (end)", unary_end.status());
  machine["loadavg_at_end"] = LoadAverage();

  std::string tf_note;
  const bool tf_available = TensorFlowImportable(&tf_note);
  const std::string tf_line =
      tf_available ? absl::StrCat("TensorFlow ClusterCoordinator: measured by "
                                  "bench/tf/tf_dispatch_bench.py (run.sh runs it next to this; ",
                                  tf_note, ")")
                   : absl::StrCat("TensorFlow ClusterCoordinator: unavailable (", tf_note, ")");

  // The reference row for the ratios and targets: 4 workers, or the largest count measured.
  const ThroughputRow* ref = &rows.front();
  for (const auto& row : rows) {
    if (row.workers == 4 || (ref->workers != 4 && row.workers > ref->workers)) ref = &row;
  }
  const bool have_four = ref->workers == 4;
  const double lone_over_unary =
      latency->unary.p50_us > 0 ? lone->p50_us / latency->unary.p50_us : 0;
  const double lone_over_unary_long =
      latency->unary_long.p50_us > 0 ? latency->lone_long.p50_us / latency->unary_long.p50_us : 0;

  // ---- table ----
  std::printf("Coordinator dispatch benchmark (tj-bench-dispatch)%s\n",
              config.smoke ? "  [--smoke: tiny counts, figures not meaningful]" : "");
  std::printf("machine: %d CPU(s), %s; %s; %s; build %s; gRPC %s; load avg %s -> %s\n",
              machine["nproc"].get<int>(), machine["cpu_model"].get<std::string>().c_str(),
              machine["kernel"].get<std::string>().c_str(),
              machine["date"].get<std::string>().c_str(), TJ_BENCH_BUILD_TYPE,
              machine["grpc_version"].get<std::string>().c_str(),
              machine["loadavg_at_start"].get<std::string>().c_str(),
              machine["loadavg_at_end"].get<std::string>().c_str());
  std::printf(
      "closures per run: %lld (or %.0f s), %d runs after warm-up; every process on 127.0.0.1\n",
      static_cast<long long>(config.closures), config.seconds, config.runs);
  if (config.experiment_no_deadlock_detection) {
    std::printf(
        "EXPERIMENT: Abseil mutex deadlock detection is OFF in the coordinator process "
        "(TJ_BENCH_EXPERIMENT_NO_DEADLOCK_DETECTION); not the default runtime\n");
  }
  std::printf("\n");

  std::printf(
      "Baselines (raw gRPC to the same tj-worker processes, \"noop\", same channel settings)\n");
  std::printf("  %-44s %9s %9s  %7s  %7s  %12s  %12s  %9s\n", "baseline", "best/s", "median/s",
              "p50 us", "p99 us", "client CPU/op", "worker CPU/op", "TCP segs/op");
  auto baseline_line = [](const char* name, const Baseline& b, bool latency) {
    char p50[16] = "-", p99[16] = "-";
    if (latency) {
      std::snprintf(p50, sizeof(p50), "%.1f", b.latency.p50_us);
      std::snprintf(p99, sizeof(p99), "%.1f", b.latency.p99_us);
    }
    std::printf("  %-44s %9s %9s  %7s  %7s  %9.2f us  %9.2f us  %9.2f\n", name,
                Rate(b.rate).c_str(), Rate(b.median_rate).c_str(), p50, p99, b.client_cpu_us,
                b.worker_cpu_us, b.tcp_segments);
  };
  baseline_line("unary Worker.Run, 1 connection, sequential", *unary, true);
  baseline_line("  same, again after the coordinator runs", *unary_end, true);
  baseline_line("RunStream ping-pong, 1 run per message", *stream_pp, true);
  baseline_line("RunStream, 256-run batches (closures/s)", *stream_batched, false);
  baseline_line("unary Worker.Run, 8 connections, 8 threads", *parallel, false);
  std::printf(
      "  (best and median of %d runs; latency and costs are the best run's. 256-run batches: "
      "p50 %.0f us, p99 %.0f us per batch. Unary drift end/start: %s)\n\n",
      config.runs, stream_batched->latency.p50_us, stream_batched->latency.p99_us,
      Ratio(unary_end->rate, unary->rate).c_str());

  std::printf(
      "No-op closures/s (ClusterCoordinator: Schedule N \"noop\", then Join), vs baselines\n");
  std::printf("  %-7s %10s %10s  %12s %12s %12s %12s\n", "workers", "best", "median", "vs unary",
              "vs stream pp", "vs batch256", "vs unary x8");
  for (const auto& row : rows) {
    std::printf("  %-7d %10s %10s  %12s %12s %12s %12s\n", row.workers, Rate(row.best).c_str(),
                Rate(row.median).c_str(), Ratio(row.best, unary->rate).c_str(),
                Ratio(row.best, stream_pp->rate).c_str(),
                Ratio(row.best, stream_batched->rate).c_str(),
                Ratio(row.best, parallel->rate).c_str());
  }
  std::printf("  (ratios use the best of the runs)\n");
  std::printf("  %-7s %15s %15s %12s  %s\n", "workers", "coord CPU/clos", "worker CPU/clos",
              "TCP segs/clos", "final window per worker");
  for (const auto& row : rows) {
    std::string windows;
    for (size_t i = 0; i < row.final_windows.size(); ++i) {
      absl::StrAppend(&windows, i == 0 ? "" : ",", row.final_windows[i]);
    }
    std::printf("  %-7d %12.2f us %12.2f us %12.3f  %s\n", row.workers, row.coordinator_cpu_us,
                row.worker_cpu_us, row.tcp_segments, windows.c_str());
  }
  std::printf(
      "  (costs per closure averaged over the measured runs; CPU from getrusage and "
      "/proc/PID/stat, 10 ms ticks)\n\n");

  std::printf(
      "Lone-closure latency, paired: lone closure / raw unary / raw stream ping-pong, "
      "in alternating blocks of %d (1 worker, %zu samples each)\n",
      LatencyBlock(config), lone->samples);
  std::printf("  %-44s %9s  %9s  %9s  %12s\n", "", "p50 us", "p99 us", "mean us", "p50 vs unary");
  auto latency_line = [&](const char* name, const LatencySummary& l) {
    std::printf("  %-44s %9.1f  %9.1f  %9.1f  %12s\n", name, l.p50_us, l.p99_us, l.mean_us,
                Ratio(l.p50_us, latency->unary.p50_us).c_str());
  };
  latency_line("lone closure (Schedule + Fetch)", *lone);
  latency_line("raw unary Worker.Run", latency->unary);
  latency_line("raw RunStream ping-pong", latency->stream);
  std::printf("  one long run each, back to back (%zu samples):\n", latency->lone_long.samples);
  std::printf("  %-44s %9.1f  %9.1f  %9.1f  %12s\n", "lone closure (Schedule + Fetch)",
              latency->lone_long.p50_us, latency->lone_long.p99_us, latency->lone_long.mean_us,
              Ratio(latency->lone_long.p50_us, latency->unary_long.p50_us).c_str());
  std::printf("  %-44s %9.1f  %9.1f  %9.1f  %12s\n", "raw unary Worker.Run",
              latency->unary_long.p50_us, latency->unary_long.p99_us, latency->unary_long.mean_us,
              "1.00x");
  std::printf("  (lone closure p50 vs raw stream ping-pong p50: %s)\n\n",
              Ratio(lone->p50_us, latency->stream.p50_us).c_str());

  std::printf("Targets\n");
  const bool throughput_met = have_four && ref->best >= kTargetClosuresPerSecond4Workers;
  const bool latency_met = lone_over_unary > 0 && lone_over_unary <= kTargetLoneOverUnaryP50 &&
                           lone_over_unary_long > 0 &&
                           lone_over_unary_long <= kTargetLoneOverUnaryP50;
  if (have_four) {
    std::printf("  closures/s on 4 workers >= %.0f: %s (%s = %.0f%% of target)\n",
                kTargetClosuresPerSecond4Workers, throughput_met ? "MET" : "MISSED",
                Rate(ref->best).c_str(), 100.0 * ref->best / kTargetClosuresPerSecond4Workers);
  } else {
    std::printf("  closures/s on 4 workers >= %.0f: not measured (--workers has no 4)\n",
                kTargetClosuresPerSecond4Workers);
  }
  std::printf(
      "  lone closure p50 / raw unary p50 <= %.1f: %s (%.2f in alternating blocks, %.2f in "
      "long runs; both must pass)\n",
      kTargetLoneOverUnaryP50, latency_met ? "MET" : "MISSED", lone_over_unary,
      lone_over_unary_long);
  std::printf("  %d-worker closures/s vs unary ping-pong: %s, vs stream ping-pong: %s\n",
              ref->workers, Ratio(ref->best, unary->rate).c_str(),
              Ratio(ref->best, stream_pp->rate).c_str());
  std::printf("\n%s\n", tf_line.c_str());
  std::fflush(stdout);

  if (!config.json_path.empty()) {
    json out;
    out["benchmark"] = "dispatch";
    out["smoke"] = config.smoke;
    out["machine"] = machine;
    out["config"] = {{"workers", config.worker_counts},
                     {"closures", config.closures},
                     {"seconds_budget_per_run", config.seconds},
                     {"runs", config.runs},
                     {"latency_iterations", config.latency_iterations},
                     {"baseline_calls", config.baseline_calls},
                     {"worker_binary", config.worker_binary},
                     {"experiment_no_deadlock_detection", config.experiment_no_deadlock_detection}};
    out["baselines"] = {{"unary_1conn", ToJson(*unary, "calls", true)},
                        {"unary_1conn_end", ToJson(*unary_end, "calls", true)},
                        {"stream_pingpong", ToJson(*stream_pp, "msgs", true)},
                        {"stream_batch256", ToJson(*stream_batched, "closures", true)},
                        {"unary_8conn_8threads", ToJson(*parallel, "calls", false)}};
    json throughput = json::array();
    for (const auto& row : rows) {
      json runs = json::array();
      for (const auto& run : row.runs) {
        runs.push_back({{"closures", run.closures},
                        {"seconds", run.seconds},
                        {"schedule_seconds", run.schedule_seconds},
                        {"closures_per_s", run.rate},
                        {"coordinator_cpu_us_per_closure", run.coordinator_cpu_us},
                        {"worker_cpu_us_per_closure", run.worker_cpu_us},
                        {"tcp_segments_per_closure", run.tcp_segments}});
      }
      throughput.push_back({{"workers", row.workers},
                            {"best_closures_per_s", row.best},
                            {"median_closures_per_s", row.median},
                            {"vs_unary_1conn", row.best / unary->rate},
                            {"vs_stream_pingpong", row.best / stream_pp->rate},
                            {"vs_stream_batch256", row.best / stream_batched->rate},
                            {"vs_unary_8conn", row.best / parallel->rate},
                            {"coordinator_cpu_us_per_closure", row.coordinator_cpu_us},
                            {"worker_cpu_us_per_closure", row.worker_cpu_us},
                            {"tcp_segments_per_closure", row.tcp_segments},
                            {"final_windows", row.final_windows},
                            {"completed_per_worker", row.completed_per_worker},
                            {"runs", runs}});
    }
    out["throughput"] = throughput;
    out["lone_closure"] = tj::bench::ToJson(*lone);
    out["lone_closure"]["vs_unary_p50"] = lone_over_unary;
    out["lone_closure"]["vs_stream_pingpong_p50"] =
        latency->stream.p50_us > 0 ? lone->p50_us / latency->stream.p50_us : 0;
    out["lone_closure"]["paired_unary"] = tj::bench::ToJson(latency->unary);
    out["lone_closure"]["paired_stream_pingpong"] = tj::bench::ToJson(latency->stream);
    out["lone_closure"]["long_run"] = tj::bench::ToJson(latency->lone_long);
    out["lone_closure"]["long_run_unary"] = tj::bench::ToJson(latency->unary_long);
    out["lone_closure"]["long_run_vs_unary_p50"] = lone_over_unary_long;
    out["targets"] = json::array({{{"name", "closures_per_s_4_workers"},
                                   {"target", kTargetClosuresPerSecond4Workers},
                                   {"value", have_four ? json(ref->best) : json(nullptr)},
                                   {"met", have_four ? json(throughput_met) : json(nullptr)}},
                                  {{"name", "lone_p50_over_unary_p50"},
                                   {"target", kTargetLoneOverUnaryP50},
                                   {"value", lone_over_unary},
                                   {"value_long_runs", lone_over_unary_long},
                                   {"met", latency_met}}});
    out["tensorflow"] = {{"available", tf_available}, {"note", tf_line}};
    if (!WriteJsonFile(config.json_path, out, "tj-bench-dispatch")) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace tj::bench

int main(int argc, char** argv) {
  tj::bench::Config config;
  CLI::App app{
      "tj-bench-dispatch: ClusterCoordinator dispatch throughput and latency against "
      "real tj-worker processes, with raw gRPC baselines measured in the same run"};
  app.add_option("--workers", config.workers_csv, "comma-separated worker counts")
      ->capture_default_str();
  app.add_option("--closures", config.closures, "no-op closures per measured run")
      ->capture_default_str();
  app.add_option("--seconds", config.seconds,
                 "time budget of each measured run: scheduling stops once it has passed")
      ->capture_default_str();
  app.add_option("--runs", config.runs, "measured runs per worker count")->capture_default_str();
  app.add_option("--warmup", config.warmup,
                 "closures before the measured runs (default min(N/4, 20000))");
  app.add_option("--latency-iterations", config.latency_iterations,
                 "sequential lone closures for the latency figures")
      ->capture_default_str();
  app.add_option("--baseline-calls", config.baseline_calls, "calls per raw gRPC baseline")
      ->capture_default_str();
  app.add_option("--json", config.json_path, "write the results as JSON to this path");
  app.add_option("--worker-binary", config.worker_binary, "path to tj-worker")
      ->capture_default_str();
  app.add_option("--worker-log", config.worker_log,
                 "where the workers' logs go (default /dev/null)");
  app.add_flag(
      "--smoke", config.smoke,
      "a few thousand closures and short baselines: checks the benchmark runs, in seconds");
  CLI11_PARSE(app, argc, argv);
  if (config.runs < 1 || config.closures < 1 || config.latency_iterations < 1 ||
      config.baseline_calls < 1 || config.seconds <= 0) {
    std::fprintf(stderr,
                 "tj-bench-dispatch: --runs, --closures, --latency-iterations, "
                 "--baseline-calls and --seconds must be positive\n");
    return 2;
  }
  spdlog::set_level(spdlog::level::warn);  // the coordinator's info logs would break the table
  if (std::getenv("TJ_BENCH_EXPERIMENT_NO_DEADLOCK_DETECTION") != nullptr) {
    config.experiment_no_deadlock_detection = true;
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  }
  return tj::bench::Run(std::move(config));
}
