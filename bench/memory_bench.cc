// tj-bench-memory: resident memory (VmRSS / VmHWM of /proc/PID/status) of what grows with a job,
// each figure next to a baseline measured in the same run:
//   1. the coordinator with its ClosureQueue full: ClusterCoordinator with its default queue
//      capacity (262,144) filled while no worker answers (4 worker addresses where nothing listens:
//      workers not up yet), against the RSS of the same coordinator idle just before; per closure,
//      next to the bytes a closure carries (function name + serialized arguments). Two kinds of
//      closures: a no-op with its handle dropped, and one shaped like tj-train's step (the
//      per-worker trainer resource + a data range) with its RemoteValue kept, as the training loop
//      keeps them;
//   2. a PS with 1,000,000 embedding rows of dimension 16: a real tj-ps process, rows created by
//      Lookups through PsClient, RSS after - RSS with the table created and empty, against the raw
//      values, 1M x 16 x 4 bytes = 61.0 MiB (and the raw values + optimizer slots); for SGD,
//      Adagrad and Adam. The same table in process (EmbeddingTable, no RPC) gives the table's own
//      cost and its accounting (memory_bytes()).
// Each coordinator and in-process measurement runs in a fresh process (this binary re-executed
// with --child), so each starts from a clean heap.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_support.h"
#include "coordinator/cluster/cluster_coordinator.h"
#include "coordinator/cluster/schedule_args.h"
#include "coordinator/ps/embedding_table.h"
#include "coordinator/ps/ps_client.h"
#include "coordinator/ps/variable_spec.h"

#ifndef TJ_PS_BINARY
#define TJ_PS_BINARY ""
#endif
#ifndef TJ_BENCH_BUILD_TYPE
#define TJ_BENCH_BUILD_TYPE ""
#endif

namespace tj::bench {
namespace {

using json = nlohmann::json;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr int kDim = 16;
// tj-train's names (trainer/train/train_functions.h), so the closures carry the same strings.
constexpr char kTrainerResource[] = "tj.train.trainer";
constexpr char kTrainStepFunction[] = "tj.train.step";

struct Config {
  std::string ps_binary = TJ_PS_BINARY;
  std::string ps_log;
  size_t closures = kDefaultClosureQueueCapacity;  // 0: the queue's capacity
  int workers = 4;
  int64_t rows = 1'000'000;
  int64_t batch = 4096;
  std::string optimizers = "sgd,adagrad,adam";
  std::string json_path;
  bool quick = false;
  // Internal: run one measurement in this process and print it as JSON.
  std::string child;
  std::string variant;
};

int64_t StatusBytes(const std::string& pid, const std::string& field) {
  return ProcStatusBytes(pid, field);
}
int64_t Rss(const std::string& pid = "self") { return StatusBytes(pid, "VmRSS"); }
int64_t Hwm(const std::string& pid = "self") { return StatusBytes(pid, "VmHWM"); }

double MiB(int64_t bytes) { return static_cast<double>(bytes) / kMiB; }

// ---------------------------------------------------------------------------------------------
// Children.

std::string TrainerConfigJson() {
  // About the size of tj-train's configuration (TrainConfig as JSON); sent once per worker.
  json j = {{"model", "softmax"}, {"data", "/data/train.csv.gz"},
            {"batch_size", 32},   {"learning_rate", 0.001},
            {"optimizer", "sgd"}, {"epochs", 10},
            {"steps", 0},         {"seed", 1},
            {"step_sleep_ms", 0}};
  return j.dump();
}

// The coordinator's queue filled with `closures` closures while no worker answers.
int ChildQueue(const Config& config) {
  spdlog::set_level(spdlog::level::off);
  const int64_t rss_start = Rss();
  std::vector<std::string> addresses;
  for (int i = 0; i < config.workers; ++i) {
    addresses.push_back(absl::StrCat("127.0.0.1:", PickFreePort()));
  }
  CoordinatorOptions options;  // default queue capacity
  auto coordinator = ClusterCoordinator::Create(addresses, options);
  if (!coordinator.ok()) {
    std::fprintf(stderr, "%s\n", coordinator.status().ToString().c_str());
    return 1;
  }
  ClusterCoordinator& c = **coordinator;
  const bool step = config.variant == "step";
  std::optional<PerWorkerValues> trainer;
  if (step) {
    auto created = c.CreatePerWorkerResource(kTrainerResource, {TrainerConfigJson()});
    if (!created.ok()) {
      std::fprintf(stderr, "%s\n", created.status().ToString().c_str());
      return 1;
    }
    trainer = *created;
  }
  // Idle: every worker connection has tried its worker and is waiting to retry.
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (absl::Now() < deadline) {
    const auto workers = c.Workers();
    if (std::all_of(workers.begin(), workers.end(),
                    [](const WorkerStats& w) { return w.state == WorkerState::kRecovering; })) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const size_t n = std::min(config.closures, options.queue_capacity);
  std::vector<RemoteValue> handles;
  if (step) handles.reserve(n);
  std::vector<ScheduleArg> sample_args;
  if (step) sample_args = {*trainer, int64_t{1'000'000}, int64_t{1'000'032}};
  auto payload = SerializeArgs(step ? kTrainStepFunction : "noop", sample_args);
  const int64_t rss_idle = Rss();
  const int64_t hwm_idle = Hwm();

  const auto started = std::chrono::steady_clock::now();
  for (size_t i = 0; i < n; ++i) {
    absl::StatusOr<RemoteValue> value =
        step ? c.Schedule(kTrainStepFunction, {*trainer, static_cast<int64_t>(i) * 32,
                                               static_cast<int64_t>(i) * 32 + 32})
             : c.Schedule("noop");
    if (!value.ok()) {
      std::fprintf(stderr, "Schedule: %s\n", value.status().ToString().c_str());
      return 1;
    }
    if (step) handles.push_back(*std::move(value));
  }
  const double schedule_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const int64_t rss_full = Rss();
  const int64_t hwm_full = Hwm();
  json out = {{"variant", config.variant},
              {"closures", n},
              {"queue_capacity", options.queue_capacity},
              {"queued", c.queued()},
              {"inflight", c.inflight()},
              {"handles_kept", step},
              {"payload_bytes",
               (step ? sizeof(kTrainStepFunction) - 1 : 4) + (payload.ok() ? payload->size() : 0)},
              {"rss_start", rss_start},
              {"rss_idle", rss_idle},
              {"hwm_idle", hwm_idle},
              {"rss_full", rss_full},
              {"hwm_full", hwm_full},
              {"schedule_s", schedule_s}};
  std::printf("%s\n", out.dump().c_str());
  std::fflush(stdout);
  _exit(0);  // the coordinator's teardown (cancelling every closure) is not measured
}

v1::TableSpec TableSpecFor(const std::string& optimizer) {
  v1::TableSpec spec;
  spec.set_name("embedding");
  spec.set_dim(kDim);
  spec.mutable_initializer()->set_kind(v1::Initializer::RANDOM_UNIFORM);
  spec.mutable_initializer()->set_minval(-0.05f);
  spec.mutable_initializer()->set_maxval(0.05f);
  spec.mutable_initializer()->set_seed(7);
  if (optimizer == "sgd") spec.mutable_optimizer()->mutable_sgd()->set_learning_rate(0.1f);
  if (optimizer == "adagrad") spec.mutable_optimizer()->mutable_adagrad()->set_learning_rate(0.1f);
  if (optimizer == "adam") spec.mutable_optimizer()->mutable_adam()->set_learning_rate(0.001f);
  return spec;
}

// Distinct ids spread over the int64 range (what hashed feature ids look like).
std::vector<int64_t> RowIds(int64_t rows) {
  std::vector<int64_t> ids(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    ids[static_cast<size_t>(i)] =
        static_cast<int64_t>(static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ULL);
  }
  return ids;
}

// An EmbeddingTable in this process, `rows` rows created by lookups.
int ChildTable(const Config& config) {
  const int64_t rss_start = Rss();
  auto table_config = CheckTableSpec(TableSpecFor(config.variant));
  if (!table_config.ok()) {
    std::fprintf(stderr, "%s\n", table_config.status().ToString().c_str());
    return 1;
  }
  const std::vector<int64_t> ids = RowIds(config.rows);
  std::vector<float> out(static_cast<size_t>(config.batch * kDim), 0.0f);
  EmbeddingTable table(*table_config);
  const int64_t rss_idle = Rss();
  const auto started = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < config.rows; i += config.batch) {
    const int64_t n = std::min(config.batch, config.rows - i);
    (void)table.Lookup(reinterpret_cast<const char*>(ids.data() + i), static_cast<size_t>(n),
                       reinterpret_cast<char*>(out.data()));
  }
  const double create_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  json j = {{"optimizer", config.variant},
            {"rows", table.num_rows()},
            {"rss_start", rss_start},
            {"rss_idle", rss_idle},
            {"rss_full", Rss()},
            {"hwm_full", Hwm()},
            {"memory_bytes", table.memory_bytes()},
            {"create_s", create_s}};
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
  _exit(0);
}

// ---------------------------------------------------------------------------------------------
// The parent.

absl::StatusOr<json> RunChild(const std::vector<std::string>& args) {
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (len <= 0) return absl::InternalError("cannot read /proc/self/exe");
  self[len] = '\0';
  std::vector<std::string> argv = {self};
  argv.insert(argv.end(), args.begin(), args.end());
  auto result = RunCommand(argv, /*capture_stderr=*/false, absl::Minutes(5));
  if (!result.ok()) return result.status();
  if (result->exit_code != 0) {
    return absl::InternalError(absl::StrCat("child ", absl::StrJoin(args, " "), " exited with ",
                                            result->exit_code, ": ", result->output));
  }
  const json j = json::parse(result->output, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return absl::InternalError(absl::StrCat("child printed no JSON: ", result->output));
  }
  return j;
}

// Raw bytes of a row with its optimizer state: values + slots (Adagrad 1, Adam 2) + Adam's step.
int64_t RawRowBytes(const std::string& optimizer) {
  const int64_t values = kDim * 4;
  if (optimizer == "adagrad") return 2 * values;
  if (optimizer == "adam") return 3 * values + 8;
  return values;
}

struct PsResult {
  std::string optimizer;
  int64_t rows = 0;
  int64_t rss_fresh = 0;  // tj-ps started, nothing created
  int64_t rss_idle = 0;   // the table created, empty
  int64_t rss_full = 0;   // every row created
  int64_t hwm_full = 0;
  double create_s = 0;
};

absl::StatusOr<PsResult> MeasurePs(const Config& config, const std::string& optimizer) {
  auto process = WorkerProcess::Start(config.ps_binary, 0, config.ps_log);
  if (!process.ok()) return process.status();
  const std::string pid = std::to_string((*process)->pid());
  PsClientOptions options;
  options.rpc_timeout = absl::Seconds(120);
  std::shared_ptr<PsClient> ps = PsClient::Connect((*process)->address(), 0, options);
  if (auto health = ps->WaitForHealth(absl::Seconds(30)); !health.ok()) return health.status();
  PsResult r;
  r.optimizer = optimizer;
  r.rss_fresh = Rss(pid);
  v1::CreateVariablesRequest create;
  *create.add_tables() = TableSpecFor(optimizer);
  if (absl::Status s = ps->Create(create); !s.ok()) return s;
  r.rss_idle = Rss(pid);
  const std::vector<int64_t> ids = RowIds(config.rows);
  const auto started = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < config.rows; i += config.batch) {
    const int64_t n = std::min(config.batch, config.rows - i);
    v1::LookupRequest request;
    auto* lookup = request.add_lookups();
    lookup->set_table("embedding");
    lookup->set_ids(std::string(reinterpret_cast<const char*>(ids.data() + i),
                                static_cast<size_t>(n) * sizeof(int64_t)));
    if (auto response = ps->Lookup(request); !response.ok()) return response.status();
  }
  r.create_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  r.rows = config.rows;
  r.rss_full = Rss(pid);
  r.hwm_full = Hwm(pid);
  return r;
}

int Run(Config config) {
  if (config.quick) {
    config.closures = std::min<size_t>(config.closures, 16384);
    config.rows = std::min<int64_t>(config.rows, 65536);
  }
  if (config.closures == 0) config.closures = kDefaultClosureQueueCapacity;
  auto fail = [](const std::string& what, const absl::Status& s) {
    std::fprintf(stderr, "tj-bench-memory: %s: %s\n", what.c_str(), s.ToString().c_str());
    return 1;
  };
  if (access(config.ps_binary.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "tj-bench-memory: %s is not executable (build tj-ps)\n",
                 config.ps_binary.c_str());
    return 1;
  }
  std::vector<std::string> optimizers = absl::StrSplit(config.optimizers, ',', absl::SkipEmpty());
  for (const std::string& o : optimizers) {
    if (o != "sgd" && o != "adagrad" && o != "adam") {
      return fail("flags", absl::InvalidArgumentError(absl::StrCat(
                               "--optimizers: '", o, "' is not sgd, adagrad or adam")));
    }
  }
  const json machine = MachineDescription();
  std::printf(
      "tj-bench-memory: VmRSS / VmHWM from /proc/PID/status; %d CPUs, %s, load %s; "
      "build %s\n\n",
      machine["nproc"].get<int>(), machine["cpu_model"].get<std::string>().c_str(),
      machine["loadavg_at_start"].get<std::string>().c_str(), TJ_BENCH_BUILD_TYPE);
  std::fflush(stdout);
  json out;
  out["benchmark"] = "memory";
  out["machine"] = machine;
  out["config"] = {{"closures", config.closures}, {"workers", config.workers},
                   {"rows", config.rows},         {"dim", kDim},
                   {"batch", config.batch},       {"optimizers", config.optimizers},
                   {"quick", config.quick},       {"build_type", TJ_BENCH_BUILD_TYPE}};

  // 1. The coordinator's queue.
  std::printf(
      "Coordinator: ClusterCoordinator (default options) with %zu closures queued, no "
      "worker answering (%d addresses where nothing listens), one fresh process each\n",
      config.closures, config.workers);
  std::printf("  %-48s %9s %9s %9s %9s %11s %9s %9s\n", "closures", "idle MiB", "full MiB",
              "delta MiB", "full/idle", "B/closure", "payload B", "B/payload");
  json queue_json = json::array();
  for (const std::string variant : {"noop", "step"}) {
    auto j =
        RunChild({"--child", "queue", "--variant", variant, "--closures",
                  std::to_string(config.closures), "--workers", std::to_string(config.workers)});
    if (!j.ok()) return fail(absl::StrCat("coordinator queue (", variant, ")"), j.status());
    const int64_t idle = (*j)["rss_idle"].get<int64_t>();
    const int64_t full = (*j)["rss_full"].get<int64_t>();
    const auto n = (*j)["queued"].get<int64_t>();
    const auto payload = (*j)["payload_bytes"].get<int64_t>();
    const double per = n > 0 ? static_cast<double>(full - idle) / static_cast<double>(n) : 0;
    const std::string label = variant == "noop" ? "\"noop\", no arguments, handles dropped"
                                                : "tj.train.step (resource + range), handles kept";
    std::printf("  %-48s %9.1f %9.1f %9.1f %9.2f %11.0f %9lld %9.1f\n", label.c_str(), MiB(idle),
                MiB(full), MiB(full - idle), static_cast<double>(full) / static_cast<double>(idle),
                per, static_cast<long long>(payload), per / static_cast<double>(payload));
    (*j)["delta_bytes"] = full - idle;
    (*j)["bytes_per_closure"] = per;
    (*j)["full_over_idle"] = static_cast<double>(full) / static_cast<double>(idle);
    (*j)["bytes_per_payload_byte"] = per / static_cast<double>(payload);
    queue_json.push_back(*j);
    if (n != static_cast<int64_t>(config.closures)) {
      std::printf("  (only %lld of %zu queued)\n", static_cast<long long>(n), config.closures);
    }
  }
  std::printf(
      "  (baseline: the same coordinator idle just before, in the same process; payload: "
      "function name + serialized arguments, what the RunRequest carries)\n\n");
  std::fflush(stdout);
  out["coordinator_queue"] = queue_json;

  // 2. PS rows.
  const double raw = static_cast<double>(config.rows) * kDim * 4;
  std::printf(
      "PS: %lld embedding rows of dim %d created by Lookups (batches of %lld), RSS "
      "delta against the raw values (%lld x %d x 4 B = %.1f MiB)\n",
      static_cast<long long>(config.rows), kDim, static_cast<long long>(config.batch),
      static_cast<long long>(config.rows), kDim, raw / kMiB);
  std::printf("  %-40s %9s %9s %9s %9s %9s %11s %11s %10s\n", "", "idle MiB", "full MiB",
              "delta MiB", "HWM MiB", "B/row", "delta/raw", "vs +slots", "accounted");
  json ps_json = json::array();
  for (const std::string& optimizer : optimizers) {
    auto r = MeasurePs(config, optimizer);
    if (!r.ok()) return fail(absl::StrCat("tj-ps (", optimizer, ")"), r.status());
    auto local = RunChild({"--child", "table", "--variant", optimizer, "--rows",
                           std::to_string(config.rows), "--batch", std::to_string(config.batch)});
    if (!local.ok())
      return fail(absl::StrCat("in-process table (", optimizer, ")"), local.status());
    const double raw_slots = static_cast<double>(config.rows * RawRowBytes(optimizer));
    const int64_t delta = r->rss_full - r->rss_idle;
    const int64_t local_delta =
        (*local)["rss_full"].get<int64_t>() - (*local)["rss_idle"].get<int64_t>();
    const int64_t accounted = (*local)["memory_bytes"].get<int64_t>();
    std::printf("  %-40s %9.1f %9.1f %9.1f %9.1f %9.1f %11.2f %11.2f %10s\n",
                absl::StrCat("tj-ps, ", optimizer).c_str(), MiB(r->rss_idle), MiB(r->rss_full),
                MiB(delta), MiB(r->hwm_full),
                static_cast<double>(delta) / static_cast<double>(config.rows),
                static_cast<double>(delta) / raw, static_cast<double>(delta) / raw_slots, "-");
    std::printf("  %-40s %9.1f %9.1f %9.1f %9.1f %9.1f %11.2f %11.2f %9.1fM\n",
                absl::StrCat("  in process (EmbeddingTable), ", optimizer).c_str(),
                MiB((*local)["rss_idle"].get<int64_t>()), MiB((*local)["rss_full"].get<int64_t>()),
                MiB(local_delta), MiB((*local)["hwm_full"].get<int64_t>()),
                static_cast<double>(local_delta) / static_cast<double>(config.rows),
                static_cast<double>(local_delta) / raw,
                static_cast<double>(local_delta) / raw_slots, MiB(accounted));
    ps_json.push_back(
        {{"optimizer", optimizer},
         {"rows", r->rows},
         {"raw_bytes", raw},
         {"raw_with_slots_bytes", raw_slots},
         {"tj_ps",
          {{"rss_fresh", r->rss_fresh},
           {"rss_idle", r->rss_idle},
           {"rss_full", r->rss_full},
           {"hwm_full", r->hwm_full},
           {"delta_bytes", delta},
           {"bytes_per_row", static_cast<double>(delta) / static_cast<double>(r->rows)},
           {"delta_over_raw", static_cast<double>(delta) / raw},
           {"delta_over_raw_with_slots", static_cast<double>(delta) / raw_slots},
           {"create_s", r->create_s}}},
         {"in_process", *local}});
    std::fflush(stdout);
  }
  std::printf(
      "  (idle: the PS with the table created and empty; raw: the values alone; +slots: "
      "values + optimizer slots (+ Adam's step); accounted: EmbeddingTable::memory_bytes)\n");
  out["ps_rows"] = ps_json;

  std::printf(
      "\nTargets\n  none numeric in the issue: figures reported against their baselines "
      "(idle coordinator; raw row bytes)\n");
  if (config.quick)
    std::printf("  (--quick: %zu closures, %lld rows; not meaningful)\n", config.closures,
                static_cast<long long>(config.rows));
  out["targets"] = json::array();
  if (!config.json_path.empty()) {
    out["machine"]["loadavg_at_end"] = LoadAverage();
    if (!WriteJsonFile(config.json_path, out, "tj-bench-memory")) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace tj::bench

int main(int argc, char** argv) {
  tj::bench::Config config;
  CLI::App app{
      "tj-bench-memory: RSS of the coordinator with its closure queue full (against the idle "
      "coordinator) and of a PS per million embedding rows of dim 16 (against the raw bytes)"};
  app.add_option("--closures", config.closures, "closures queued (at most the queue's capacity)")
      ->capture_default_str();
  app.add_option("--workers", config.workers, "worker addresses of the coordinator")
      ->capture_default_str();
  app.add_option("--rows", config.rows, "embedding rows created on the PS")->capture_default_str();
  app.add_option("--batch", config.batch, "ids per Lookup")->capture_default_str();
  app.add_option("--optimizers", config.optimizers, "sgd, adagrad, adam")->capture_default_str();
  app.add_option("--json", config.json_path, "write the results as JSON to this path");
  app.add_option("--ps-binary", config.ps_binary, "path to tj-ps")->capture_default_str();
  app.add_option("--ps-log", config.ps_log, "where tj-ps's log goes (default /dev/null)");
  app.add_flag("--quick,--smoke", config.quick,
               "seconds: 16,384 closures, 65,536 rows; checks that the benchmark runs, figures "
               "not meaningful");
  app.add_option("--child", config.child)->group("");  // internal
  app.add_option("--variant", config.variant)->group("");
  CLI11_PARSE(app, argc, argv);
  if (config.workers < 1 || config.rows < 1 || config.batch < 1) {
    std::fprintf(stderr, "tj-bench-memory: --workers, --rows and --batch must be >= 1\n");
    return 2;
  }
  if (config.child == "queue") return tj::bench::ChildQueue(config);
  if (config.child == "table") return tj::bench::ChildTable(config);
  spdlog::set_level(spdlog::level::warn);
  return tj::bench::Run(std::move(config));
}
