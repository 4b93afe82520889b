// tj-bench-ps: the parameter server's data path against a real tj-ps process on 127.0.0.1, next to
// baselines measured in the same run (absolute numbers mean little on a shared machine; the ratios
// are the result):
//   - dense Pull and Push bandwidth (MiB/s) of float32 variables of 1 KiB .. 64 MiB through
//     PsClient (the runtime's channel, assign_add), median of several repetitions per size, as a
//     fraction of loopback TCP bandwidth measured by iperf3 (one stream, before and after);
//   - sparse Lookup and PushSparse of 4096 distinct ids (of 1M) into a dim-16 table on one PS, in
//     ids/s, through PsClient and ShardedPsClient, next to the same VariableStore calls made in
//     this process without RPC.
// Prints a table to stdout and, with --json, writes the figures and the machine description.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/baselines.h"
#include "bench/bench_support.h"
#include "coordinator/base/malloc_tuning.h"
#include "coordinator/ps/ps_client.h"
#include "coordinator/ps/sharded_ps_client.h"
#include "coordinator/ps/variable_store.h"
#include "tj/v1/ps.pb.h"

#ifndef TJ_PS_BINARY
#define TJ_PS_BINARY ""
#endif
#ifndef TJ_BENCH_BUILD_TYPE
#define TJ_BENCH_BUILD_TYPE ""
#endif

namespace tj::bench {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

// Targets of the [bench] issue.
constexpr double kTargetDenseFractionOfTcp = 0.70;  // for 64 MiB tensors
constexpr int64_t kTargetDenseBytes = int64_t{64} << 20;
constexpr double kTargetSparseIdsPerSecond = 1'000'000;
constexpr double kMiB = 1 << 20;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

struct Config {
  std::string ps_binary = TJ_PS_BINARY;
  std::string ps_log;
  std::string sizes_csv = "1K,64K,1M,16M,64M";
  std::vector<int64_t> sizes;
  int reps = 7;                               // repetitions per size (median reported)
  int64_t bytes_per_rep = int64_t{64} << 20;  // small tensors: calls per repetition move this much
  int max_calls_per_rep = 2000;
  int iperf_seconds = 3;
  int64_t id_space = 1 << 20;
  int batch = 4096;
  int sparse_calls = 400;  // Lookup / PushSparse calls per sparse repetition
  int sparse_reps = 5;
  std::string json_path;
  bool quick = false;
};

absl::StatusOr<std::vector<int64_t>> ParseSizes(const std::string& csv) {
  std::vector<int64_t> sizes;
  for (absl::string_view part : absl::StrSplit(csv, ',', absl::SkipEmpty())) {
    std::string text(part);
    int64_t unit = 1;
    if (!text.empty()) {
      const char suffix = text.back();
      if (suffix == 'K' || suffix == 'k') unit = 1 << 10;
      if (suffix == 'M' || suffix == 'm') unit = 1 << 20;
      if (unit != 1) text.pop_back();
    }
    char* end = nullptr;
    const long long n = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || n <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("bad size '", part, "' in --sizes"));
    }
    const int64_t bytes = static_cast<int64_t>(n) * unit;
    if (bytes % 4 != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("size ", bytes, " is not a whole number of float32"));
    }
    sizes.push_back(bytes);
  }
  if (sizes.empty()) return absl::InvalidArgumentError("--sizes is empty");
  return sizes;
}

std::string SizeName(int64_t bytes) {
  if (bytes % (int64_t{1} << 20) == 0) return absl::StrCat(bytes >> 20, " MiB");
  if (bytes % 1024 == 0) return absl::StrCat(bytes >> 10, " KiB");
  return absl::StrCat(bytes, " B");
}

// ---------------------------------------------------------------------------------------------
// Dense Pull / Push.

struct DenseRep {
  double pull_mib_s = 0;
  double push_mib_s = 0;
};

struct DenseRow {
  int64_t bytes = 0;
  int calls_per_rep = 0;
  std::vector<DenseRep> reps;
  double pull_median = 0;  // MiB/s
  double push_median = 0;
  double pull_best = 0;
  double push_best = 0;
  double pull_call_us = 0;  // median time of one call
  double push_call_us = 0;
  // CPU seconds per GiB moved (client = this process, PS = the tj-ps process), all reps together.
  double pull_client_cpu_s_per_gib = 0;
  double pull_ps_cpu_s_per_gib = 0;
  double push_client_cpu_s_per_gib = 0;
  double push_ps_cpu_s_per_gib = 0;
};

v1::Tensor FloatTensor(int64_t elements, float value) {
  v1::Tensor t;
  t.set_dtype(v1::DTYPE_FLOAT32);
  t.add_shape(elements);
  std::vector<float> data(static_cast<size_t>(elements), value);
  t.set_data(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float));
  return t;
}

absl::StatusOr<DenseRow> MeasureDense(const Config& config, const PsClient& ps,
                                      const WorkerProcess& ps_process, int64_t bytes) {
  DenseRow row;
  row.bytes = bytes;
  const int64_t elements = bytes / 4;
  const std::string name = absl::StrCat("dense_", bytes);
  v1::VariableSpec spec;
  spec.set_name(name);
  spec.add_shape(elements);  // zeros; optimizer unset: assign_add
  if (absl::Status s = ps.CreateVariables({spec}); !s.ok()) return s;
  row.calls_per_rep = static_cast<int>(std::clamp<int64_t>(
      config.bytes_per_rep / bytes, 1, static_cast<int64_t>(config.max_calls_per_rep)));
  const v1::Tensor delta = FloatTensor(elements, 1e-3f);
  const std::vector<std::string> names = {name};

  // Pulls receive into the same tensors every call, as a worker pulling its variables each step
  // does (PsClient::PullInto): fresh 64 MiB buffers would measure page faults, not the data path.
  std::vector<v1::Tensor> received;
  auto pull = [&]() -> absl::Status {
    if (absl::Status s = ps.PullInto(names, received); !s.ok()) return s;
    if (received[0].data().size() != static_cast<size_t>(bytes)) {
      return absl::InternalError(
          absl::StrCat("pull of ", name, " returned ", received[0].data().size(), " bytes"));
    }
    return absl::OkStatus();
  };
  // Each push consumes its tensor (moved into the request); the copies are made before the timed
  // loop so the figure is the RPC and the PS's apply, not the benchmark's memcpy.
  auto make_deltas = [&](int n) {
    std::vector<std::vector<v1::Tensor>> out(static_cast<size_t>(n));
    for (auto& d : out) d.push_back(delta);
    return out;
  };

  // Warm-up: connection, HTTP/2 flow-control windows, allocator.
  for (int i = 0; i < std::min(row.calls_per_rep, 20); ++i) {
    if (absl::Status s = pull(); !s.ok()) return s;
  }
  {
    auto deltas = make_deltas(std::min(row.calls_per_rep, 20));
    for (auto& d : deltas) {
      if (absl::Status s = ps.Push(names, std::move(d)); !s.ok()) return s;
    }
  }

  const double moved_gib =
      static_cast<double>(bytes) * row.calls_per_rep * config.reps / (1024.0 * kMiB);
  double pull_client_cpu = 0, pull_ps_cpu = 0, push_client_cpu = 0, push_ps_cpu = 0;
  std::vector<double> pull_rates, push_rates;
  for (int r = 0; r < config.reps; ++r) {
    DenseRep rep;
    double cpu_self = SelfCpuSeconds();
    double cpu_ps = ps_process.CpuSeconds();
    auto start = Clock::now();
    for (int i = 0; i < row.calls_per_rep; ++i) {
      if (absl::Status s = pull(); !s.ok()) return s;
    }
    double seconds = SecondsSince(start);
    pull_client_cpu += SelfCpuSeconds() - cpu_self;
    pull_ps_cpu += ps_process.CpuSeconds() - cpu_ps;
    rep.pull_mib_s = static_cast<double>(bytes) * row.calls_per_rep / kMiB / seconds;

    auto deltas = make_deltas(row.calls_per_rep);
    cpu_self = SelfCpuSeconds();
    cpu_ps = ps_process.CpuSeconds();
    start = Clock::now();
    for (auto& d : deltas) {
      if (absl::Status s = ps.Push(names, std::move(d)); !s.ok()) return s;
    }
    seconds = SecondsSince(start);
    push_client_cpu += SelfCpuSeconds() - cpu_self;
    push_ps_cpu += ps_process.CpuSeconds() - cpu_ps;
    rep.push_mib_s = static_cast<double>(bytes) * row.calls_per_rep / kMiB / seconds;

    row.reps.push_back(rep);
    pull_rates.push_back(rep.pull_mib_s);
    push_rates.push_back(rep.push_mib_s);
  }
  row.pull_median = Median(pull_rates);
  row.push_median = Median(push_rates);
  row.pull_best = *std::max_element(pull_rates.begin(), pull_rates.end());
  row.push_best = *std::max_element(push_rates.begin(), push_rates.end());
  row.pull_call_us = static_cast<double>(bytes) / kMiB / row.pull_median * 1e6;
  row.push_call_us = static_cast<double>(bytes) / kMiB / row.push_median * 1e6;
  row.pull_client_cpu_s_per_gib = pull_client_cpu / moved_gib;
  row.pull_ps_cpu_s_per_gib = pull_ps_cpu / moved_gib;
  row.push_client_cpu_s_per_gib = push_client_cpu / moved_gib;
  row.push_ps_cpu_s_per_gib = push_ps_cpu / moved_gib;
  return row;
}

// ---------------------------------------------------------------------------------------------
// Sparse Lookup / PushSparse.

constexpr char kTable[] = "embedding";
constexpr int kDim = 16;

v1::TableSpec TableSpec() {
  v1::TableSpec spec;
  spec.set_name(kTable);
  spec.set_dim(kDim);
  spec.mutable_initializer()->set_kind(v1::Initializer::RANDOM_UNIFORM);
  spec.mutable_initializer()->set_minval(-0.05f);
  spec.mutable_initializer()->set_maxval(0.05f);
  spec.mutable_initializer()->set_seed(7);
  // Optimizer unset: assign_add, as for the dense variables.
  return spec;
}

std::string IdBytes(std::span<const int64_t> ids) {
  return std::string(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(int64_t));
}

// The batches every sparse measurement uses, identical for the RPC and in-process paths.
struct SparseBatches {
  std::vector<std::vector<int64_t>> measured;     // distinct ids within each batch
  std::vector<std::vector<int64_t>> first_touch;  // every id of the space once, shuffled
  std::vector<v1::LookupRequest> lookups;
  std::vector<v1::PushSparseRequest> pushes;
  std::vector<float> gradients;  // batch * dim, shared by every push
};

SparseBatches MakeSparseBatches(const Config& config, int num_batches) {
  SparseBatches b;
  std::mt19937_64 rng(42);
  std::vector<int64_t> perm(static_cast<size_t>(config.id_space));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (size_t i = 0; i < perm.size(); i += static_cast<size_t>(config.batch)) {
    const size_t end = std::min(perm.size(), i + static_cast<size_t>(config.batch));
    b.first_touch.emplace_back(perm.begin() + static_cast<std::ptrdiff_t>(i),
                               perm.begin() + static_cast<std::ptrdiff_t>(end));
  }
  // Each measured batch: `batch` distinct ids drawn uniformly (a partial Fisher-Yates shuffle).
  const size_t n = perm.size();
  const size_t k = std::min(n, static_cast<size_t>(config.batch));
  for (int j = 0; j < num_batches; ++j) {
    for (size_t i = 0; i < k; ++i) {
      std::uniform_int_distribution<size_t> pick(i, n - 1);
      std::swap(perm[i], perm[pick(rng)]);
    }
    b.measured.emplace_back(perm.begin(), perm.begin() + static_cast<std::ptrdiff_t>(k));
  }
  b.gradients.assign(k * kDim, 1e-3f);
  const std::string gradient_bytes(reinterpret_cast<const char*>(b.gradients.data()),
                                   b.gradients.size() * sizeof(float));
  for (const auto& ids : b.measured) {
    v1::LookupRequest lookup;
    auto* l = lookup.add_lookups();
    l->set_table(kTable);
    l->set_ids(IdBytes(ids));
    b.lookups.push_back(std::move(lookup));
    v1::PushSparseRequest push;
    auto* u = push.add_updates();
    u->set_table(kTable);
    u->set_ids(IdBytes(ids));
    u->set_gradients(gradient_bytes);
    b.pushes.push_back(std::move(push));
  }
  return b;
}

// One way of making the sparse calls: through a PsClient, a ShardedPsClient or a VariableStore.
struct SparsePath {
  std::string label;
  std::function<absl::Status(size_t batch)> lookup;       // measured batch i
  std::function<absl::Status(size_t batch)> push;         // measured batch i
  std::function<absl::Status(size_t batch)> first_touch;  // first-touch batch i (may be empty)
};

struct SparseResult {
  std::string label;
  double first_touch_ids_s = 0;  // 0 when not measured
  double lookup_median = 0;      // ids/s
  double lookup_best = 0;
  double push_median = 0;
  double push_best = 0;
  double lookup_call_us = 0;  // per batch, at the median rate
  double push_call_us = 0;
  // CPU per million ids (client = this process; PS = the tj-ps process, 0 in process).
  double lookup_client_cpu_s_per_mids = 0;
  double lookup_ps_cpu_s_per_mids = 0;
  double push_client_cpu_s_per_mids = 0;
  double push_ps_cpu_s_per_mids = 0;
};

absl::StatusOr<SparseResult> MeasureSparse(const Config& config, const SparseBatches& batches,
                                           const SparsePath& path, const WorkerProcess* ps) {
  SparseResult result;
  result.label = path.label;
  const double ids_per_call = static_cast<double>(batches.measured[0].size());
  auto ps_cpu = [ps] { return ps != nullptr ? ps->CpuSeconds() : 0.0; };
  if (path.first_touch) {
    const auto start = Clock::now();
    double ids = 0;
    for (size_t i = 0; i < batches.first_touch.size(); ++i) {
      if (absl::Status s = path.first_touch(i); !s.ok()) return s;
      ids += static_cast<double>(batches.first_touch[i].size());
    }
    result.first_touch_ids_s = ids / SecondsSince(start);
  }
  // Warm-up.
  for (size_t i = 0; i < std::min<size_t>(20, batches.measured.size()); ++i) {
    if (absl::Status s = path.lookup(i); !s.ok()) return s;
    if (absl::Status s = path.push(i); !s.ok()) return s;
  }
  auto measure = [&](const std::function<absl::Status(size_t)>& call, double& median, double& best,
                     double& client_cpu, double& ps_cpu_out) -> absl::Status {
    std::vector<double> rates;
    double cpu_self = 0, cpu_ps = 0;
    for (int r = 0; r < config.sparse_reps; ++r) {
      const double self0 = SelfCpuSeconds();
      const double ps0 = ps_cpu();
      const auto start = Clock::now();
      for (int c = 0; c < config.sparse_calls; ++c) {
        if (absl::Status s = call(static_cast<size_t>(c) % batches.measured.size()); !s.ok()) {
          return s;
        }
      }
      const double seconds = SecondsSince(start);
      cpu_self += SelfCpuSeconds() - self0;
      cpu_ps += ps_cpu() - ps0;
      rates.push_back(ids_per_call * config.sparse_calls / seconds);
    }
    median = Median(rates);
    best = *std::max_element(rates.begin(), rates.end());
    const double mids = ids_per_call * config.sparse_calls * config.sparse_reps / 1e6;
    client_cpu = cpu_self / mids;
    ps_cpu_out = cpu_ps / mids;
    return absl::OkStatus();
  };
  if (absl::Status s =
          measure(path.lookup, result.lookup_median, result.lookup_best,
                  result.lookup_client_cpu_s_per_mids, result.lookup_ps_cpu_s_per_mids);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = measure(path.push, result.push_median, result.push_best,
                               result.push_client_cpu_s_per_mids, result.push_ps_cpu_s_per_mids);
      !s.ok()) {
    return s;
  }
  result.lookup_call_us = ids_per_call / result.lookup_median * 1e6;
  result.push_call_us = ids_per_call / result.push_median * 1e6;
  return result;
}

// ---------------------------------------------------------------------------------------------

json ToJson(const SparseResult& r) {
  return {{"path", r.label},
          {"first_touch_lookup_ids_per_s", r.first_touch_ids_s},
          {"lookup_ids_per_s_median", r.lookup_median},
          {"lookup_ids_per_s_best", r.lookup_best},
          {"push_sparse_ids_per_s_median", r.push_median},
          {"push_sparse_ids_per_s_best", r.push_best},
          {"lookup_us_per_batch", r.lookup_call_us},
          {"push_sparse_us_per_batch", r.push_call_us},
          {"lookup_client_cpu_s_per_million_ids", r.lookup_client_cpu_s_per_mids},
          {"lookup_ps_cpu_s_per_million_ids", r.lookup_ps_cpu_s_per_mids},
          {"push_client_cpu_s_per_million_ids", r.push_client_cpu_s_per_mids},
          {"push_ps_cpu_s_per_million_ids", r.push_ps_cpu_s_per_mids}};
}

int Run(Config config) {
  if (config.quick) {
    config.reps = std::min(config.reps, 3);
    config.bytes_per_rep = std::min<int64_t>(config.bytes_per_rep, int64_t{4} << 20);
    config.max_calls_per_rep = std::min(config.max_calls_per_rep, 200);
    config.iperf_seconds = 1;
    config.id_space = std::min<int64_t>(config.id_space, 1 << 16);
    config.sparse_calls = std::min(config.sparse_calls, 20);
    config.sparse_reps = std::min(config.sparse_reps, 2);
  }
  auto sizes = ParseSizes(config.sizes_csv);
  if (!sizes.ok()) {
    std::fprintf(stderr, "tj-bench-ps: %s\n", sizes.status().ToString().c_str());
    return 2;
  }
  config.sizes = *sizes;
  if (config.ps_binary.empty()) {
    std::fprintf(stderr, "tj-bench-ps: pass --ps-binary (path to tj-ps)\n");
    return 2;
  }
  if (config.id_space < config.batch) {
    std::fprintf(stderr, "tj-bench-ps: --id-space must be at least --batch\n");
    return 2;
  }
  json machine = MachineDescription();
  machine["build_type"] = TJ_BENCH_BUILD_TYPE;
  auto fail = [](const std::string& what, const absl::Status& status) {
    std::fprintf(stderr, "tj-bench-ps: %s: %s\n", what.c_str(), status.ToString().c_str());
    return 1;
  };

  auto process = WorkerProcess::Start(config.ps_binary, 0, config.ps_log);
  if (!process.ok()) return fail("starting tj-ps", process.status());
  const WorkerProcess& ps_process = **process;
  PsClientOptions client_options;
  client_options.rpc_timeout = absl::Seconds(120);  // 64 MiB on a loaded 2-CPU machine
  std::shared_ptr<PsClient> ps = PsClient::Connect(ps_process.address(), 0, client_options);
  if (auto health = ps->WaitForHealth(absl::Seconds(30)); !health.ok()) {
    return fail("tj-ps health", health.status());
  }

  std::printf("Parameter-server data path (tj-bench-ps): one tj-ps at %s, %d CPUs, load %s\n\n",
              ps_process.address().c_str(), machine["nproc"].get<int>(), LoadAverage().c_str());
  std::fflush(stdout);

  // Dense, between two iperf3 runs: the baseline for the ratios is the higher of the two (the
  // conservative choice), and their difference shows how much the machine's load moved.
  const IperfResult iperf_before = RunIperf(config.iperf_seconds);
  std::vector<DenseRow> dense;
  for (int64_t bytes : config.sizes) {
    auto row = MeasureDense(config, *ps, ps_process, bytes);
    if (!row.ok()) return fail(absl::StrCat("dense ", SizeName(bytes)), row.status());
    dense.push_back(*row);
  }
  const IperfResult iperf_after =
      iperf_before.available ? RunIperf(config.iperf_seconds) : iperf_before;
  const bool have_tcp = iperf_before.available && iperf_after.available;
  const double tcp_mib_s =
      have_tcp ? std::max(iperf_before.mib_per_second(), iperf_after.mib_per_second()) : 0;

  std::printf("Baseline: loopback TCP, iperf3 -c 127.0.0.1 -t %d (one stream), same run\n",
              config.iperf_seconds);
  if (have_tcp) {
    std::printf("  before dense runs %10.0f MiB/s (%.2f Gbit/s)\n", iperf_before.mib_per_second(),
                iperf_before.bits_per_second / 1e9);
    std::printf("  after dense runs  %10.0f MiB/s (%.2f Gbit/s)\n", iperf_after.mib_per_second(),
                iperf_after.bits_per_second / 1e9);
    std::printf("  ratios below use the higher: %.0f MiB/s\n\n", tcp_mib_s);
  } else {
    std::printf("  unavailable: %s; no ratio is given\n\n",
                (iperf_before.available ? iperf_after.note : iperf_before.note).c_str());
  }

  std::printf("Dense float32 Pull / Push through PsClient (assign_add), MiB/s, median of %d reps\n",
              config.reps);
  std::printf("  %-8s %6s %10s %10s %10s %10s %8s %8s %11s %11s\n", "size", "calls", "pull",
              "pull best", "push", "push best", "pull/TCP", "push/TCP", "pull us/op", "push us/op");
  for (const DenseRow& row : dense) {
    const std::string pull_ratio =
        have_tcp ? absl::StrFormat("%7.1f%%", 100 * row.pull_median / tcp_mib_s) : "      -";
    const std::string push_ratio =
        have_tcp ? absl::StrFormat("%7.1f%%", 100 * row.push_median / tcp_mib_s) : "      -";
    std::printf("  %-8s %6d %10.1f %10.1f %10.1f %10.1f %8s %8s %11.1f %11.1f\n",
                SizeName(row.bytes).c_str(), row.calls_per_rep, row.pull_median, row.pull_best,
                row.push_median, row.push_best, pull_ratio.c_str(), push_ratio.c_str(),
                row.pull_call_us, row.push_call_us);
  }
  std::printf("  (calls: calls per rep; a rep's rate is its bytes / its time)\n");
  std::printf("  CPU seconds per GiB moved:  %-8s %12s %12s %12s %12s\n", "size", "pull client",
              "pull PS", "push client", "push PS");
  for (const DenseRow& row : dense) {
    std::printf("                              %-8s %12.2f %12.2f %12.2f %12.2f\n",
                SizeName(row.bytes).c_str(), row.pull_client_cpu_s_per_gib,
                row.pull_ps_cpu_s_per_gib, row.push_client_cpu_s_per_gib,
                row.push_ps_cpu_s_per_gib);
  }
  std::printf("\n");
  std::fflush(stdout);

  // Sparse: the PS and an in-process VariableStore get the same table and the same batches.
  const int num_batches = std::max(1, std::min(config.sparse_calls, 64));
  const SparseBatches batches = MakeSparseBatches(config, num_batches);
  v1::CreateVariablesRequest create;
  *create.add_tables() = TableSpec();
  if (absl::Status s = ps->Create(create); !s.ok()) return fail("create table", s);

  SparsePath rpc;
  rpc.label = "PsClient (RPC)";
  rpc.lookup = [&](size_t i) { return ps->Lookup(batches.lookups[i]).status(); };
  rpc.push = [&](size_t i) { return ps->PushSparse(batches.pushes[i]); };
  rpc.first_touch = [&](size_t i) {
    v1::LookupRequest request;
    auto* l = request.add_lookups();
    l->set_table(kTable);
    l->set_ids(IdBytes(batches.first_touch[i]));
    return ps->Lookup(request).status();
  };
  auto sharded = ShardedPsClient::Create({ps}, {}, {TableSpec()});
  if (!sharded.ok()) return fail("ShardedPsClient", sharded.status());
  SparsePath sharded_path;
  sharded_path.label = "ShardedPsClient, 1 PS (RPC)";
  sharded_path.lookup = [&](size_t i) {
    const SparseLookup lookup{kTable, batches.measured[i]};
    return (*sharded)->Lookup(std::span<const SparseLookup>(&lookup, 1)).status();
  };
  sharded_path.push = [&](size_t i) {
    const SparseUpdate update{kTable, batches.measured[i], batches.gradients};
    return (*sharded)->PushSparse(std::span<const SparseUpdate>(&update, 1));
  };
  VariableStore store;
  if (absl::Status s = store.Create(create); !s.ok()) return fail("in-process table", s);
  SparsePath local;
  local.label = "VariableStore in process (no RPC)";
  local.lookup = [&](size_t i) {
    v1::LookupResponse response;
    return store.Lookup(batches.lookups[i], response);
  };
  local.push = [&](size_t i) { return store.PushSparse(batches.pushes[i]); };
  local.first_touch = [&](size_t i) {
    v1::LookupRequest request;
    auto* l = request.add_lookups();
    l->set_table(kTable);
    l->set_ids(IdBytes(batches.first_touch[i]));
    v1::LookupResponse response;
    return store.Lookup(request, response);
  };

  auto local_result = MeasureSparse(config, batches, local, nullptr);
  if (!local_result.ok()) return fail("sparse in process", local_result.status());
  auto rpc_result = MeasureSparse(config, batches, rpc, &ps_process);
  if (!rpc_result.ok()) return fail("sparse through PsClient", rpc_result.status());
  auto sharded_result = MeasureSparse(config, batches, sharded_path, &ps_process);
  if (!sharded_result.ok()) return fail("sparse through ShardedPsClient", sharded_result.status());

  std::printf(
      "Sparse, one PS: table dim %d, batches of %zu distinct ids of %lld, ids/s, median of %d "
      "reps of %d calls\n",
      kDim, batches.measured[0].size(), static_cast<long long>(config.id_space), config.sparse_reps,
      config.sparse_calls);
  std::printf("  %-36s %12s %12s %12s %10s %10s %12s\n", "path", "lookup", "push_sparse",
              "first touch", "lookup/in", "push/in", "us/batch l/p");
  for (const SparseResult* r : {&*local_result, &*rpc_result, &*sharded_result}) {
    const std::string first =
        r->first_touch_ids_s > 0 ? absl::StrFormat("%12.0f", r->first_touch_ids_s) : "           -";
    std::printf("  %-36s %12.0f %12.0f %12s %9.2fx %9.2fx %6.0f/%-6.0f\n", r->label.c_str(),
                r->lookup_median, r->push_median, first.c_str(),
                r->lookup_median / local_result->lookup_median,
                r->push_median / local_result->push_median, r->lookup_call_us, r->push_call_us);
  }
  std::printf("  CPU seconds per million ids: %-36s %8s %8s %8s %8s\n", "", "l client", "l PS",
              "p client", "p PS");
  for (const SparseResult* r : {&*local_result, &*rpc_result, &*sharded_result}) {
    std::printf("                               %-36s %8.3f %8.3f %8.3f %8.3f\n", r->label.c_str(),
                r->lookup_client_cpu_s_per_mids, r->lookup_ps_cpu_s_per_mids,
                r->push_client_cpu_s_per_mids, r->push_ps_cpu_s_per_mids);
  }
  std::printf("  (first touch: one pass over the whole id space, creating every row)\n\n");

  // Targets.
  const DenseRow* target_row = nullptr;
  for (const DenseRow& row : dense) {
    if (row.bytes == kTargetDenseBytes) target_row = &row;
  }
  std::optional<bool> dense_met;
  double pull_frac = 0, push_frac = 0;
  std::printf("Targets\n");
  if (target_row == nullptr) {
    std::printf("  64 MiB pull/push >= %.0f%% of loopback TCP: not measured (64M not in --sizes)\n",
                100 * kTargetDenseFractionOfTcp);
  } else if (!have_tcp) {
    std::printf("  64 MiB pull/push >= %.0f%% of loopback TCP: baseline unavailable (%s)\n",
                100 * kTargetDenseFractionOfTcp, iperf_before.note.c_str());
  } else {
    pull_frac = target_row->pull_median / tcp_mib_s;
    push_frac = target_row->push_median / tcp_mib_s;
    dense_met = pull_frac >= kTargetDenseFractionOfTcp && push_frac >= kTargetDenseFractionOfTcp;
    std::printf("  64 MiB pull/push >= %.0f%% of loopback TCP: %s (pull %.1f%%, push %.1f%%)\n",
                100 * kTargetDenseFractionOfTcp, *dense_met ? "MET" : "MISSED", 100 * pull_frac,
                100 * push_frac);
  }
  const bool sparse_met = rpc_result->lookup_median >= kTargetSparseIdsPerSecond &&
                          rpc_result->push_median >= kTargetSparseIdsPerSecond;
  std::printf("  sparse ids/s through one PS >= %.0f: %s (lookup %.0f, push_sparse %.0f)\n",
              kTargetSparseIdsPerSecond, sparse_met ? "MET" : "MISSED", rpc_result->lookup_median,
              rpc_result->push_median);
  std::printf("  RPC / in-process: lookup %.2fx, push_sparse %.2fx\n",
              rpc_result->lookup_median / local_result->lookup_median,
              rpc_result->push_median / local_result->push_median);
  if (config.quick) std::printf("  (--quick: short runs, small id space; not meaningful)\n");

  if (!config.json_path.empty()) {
    json out;
    out["benchmark"] = "ps";
    out["machine"] = machine;
    out["machine"]["loadavg_at_end"] = LoadAverage();
    out["config"] = {{"sizes_bytes", config.sizes},
                     {"reps", config.reps},
                     {"bytes_per_rep", config.bytes_per_rep},
                     {"max_calls_per_rep", config.max_calls_per_rep},
                     {"iperf_seconds", config.iperf_seconds},
                     {"id_space", config.id_space},
                     {"batch", config.batch},
                     {"dim", kDim},
                     {"sparse_calls", config.sparse_calls},
                     {"sparse_reps", config.sparse_reps},
                     {"quick", config.quick}};
    auto iperf_json = [](const IperfResult& r) {
      return json{{"available", r.available},
                  {"note", r.note},
                  {"bits_per_second", r.bits_per_second},
                  {"mib_per_s", r.mib_per_second()}};
    };
    out["tcp_baseline"] = {{"tool", "iperf3"},
                           {"before", iperf_json(iperf_before)},
                           {"after", iperf_json(iperf_after)},
                           {"mib_per_s_used", have_tcp ? json(tcp_mib_s) : json(nullptr)}};
    json dense_json = json::array();
    for (const DenseRow& row : dense) {
      json reps = json::array();
      for (const DenseRep& rep : row.reps) {
        reps.push_back({{"pull_mib_s", rep.pull_mib_s}, {"push_mib_s", rep.push_mib_s}});
      }
      dense_json.push_back(
          {{"bytes", row.bytes},
           {"calls_per_rep", row.calls_per_rep},
           {"pull_mib_s_median", row.pull_median},
           {"pull_mib_s_best", row.pull_best},
           {"push_mib_s_median", row.push_median},
           {"push_mib_s_best", row.push_best},
           {"pull_vs_tcp", have_tcp ? json(row.pull_median / tcp_mib_s) : json(nullptr)},
           {"push_vs_tcp", have_tcp ? json(row.push_median / tcp_mib_s) : json(nullptr)},
           {"pull_us_per_call", row.pull_call_us},
           {"push_us_per_call", row.push_call_us},
           {"pull_client_cpu_s_per_gib", row.pull_client_cpu_s_per_gib},
           {"pull_ps_cpu_s_per_gib", row.pull_ps_cpu_s_per_gib},
           {"push_client_cpu_s_per_gib", row.push_client_cpu_s_per_gib},
           {"push_ps_cpu_s_per_gib", row.push_ps_cpu_s_per_gib},
           {"reps", reps}});
    }
    out["dense"] = dense_json;
    out["sparse"] = {
        {"in_process", ToJson(*local_result)},
        {"ps_client", ToJson(*rpc_result)},
        {"sharded_ps_client", ToJson(*sharded_result)},
        {"lookup_rpc_vs_in_process", rpc_result->lookup_median / local_result->lookup_median},
        {"push_sparse_rpc_vs_in_process", rpc_result->push_median / local_result->push_median}};
    out["targets"] =
        json::array({{{"name", "dense_64mib_fraction_of_tcp"},
                      {"target", kTargetDenseFractionOfTcp},
                      {"pull", target_row != nullptr && have_tcp ? json(pull_frac) : json(nullptr)},
                      {"push", target_row != nullptr && have_tcp ? json(push_frac) : json(nullptr)},
                      {"met", dense_met.has_value() ? json(*dense_met) : json(nullptr)}},
                     {{"name", "sparse_ids_per_s_one_ps"},
                      {"target", kTargetSparseIdsPerSecond},
                      {"lookup", rpc_result->lookup_median},
                      {"push_sparse", rpc_result->push_median},
                      {"met", sparse_met}}});
    if (!WriteJsonFile(config.json_path, out, "tj-bench-ps")) return 1;
  }
  return 0;
}

}  // namespace
}  // namespace tj::bench

int main(int argc, char** argv) {
  // The benchmark is the client side of the data path, as a worker process is.
  tj::TuneMallocForLargeTensors();
  tj::bench::Config config;
  CLI::App app{
      "tj-bench-ps: parameter-server dense and sparse data path against a real tj-ps, with "
      "loopback TCP (iperf3) and in-process baselines measured in the same run"};
  app.add_option("--sizes", config.sizes_csv, "dense tensor sizes (bytes; K and M suffixes)")
      ->capture_default_str();
  app.add_option("--reps", config.reps, "repetitions per dense size (median reported)")
      ->capture_default_str();
  app.add_option("--bytes-per-rep", config.bytes_per_rep,
                 "small tensors: calls per repetition move about this many bytes")
      ->capture_default_str();
  app.add_option("--max-calls-per-rep", config.max_calls_per_rep, "cap on calls per repetition")
      ->capture_default_str();
  app.add_option("--iperf-seconds", config.iperf_seconds, "length of each iperf3 run")
      ->capture_default_str();
  app.add_option("--id-space", config.id_space, "sparse ids are drawn from [0, this)")
      ->capture_default_str();
  app.add_option("--batch", config.batch, "distinct ids per Lookup / PushSparse")
      ->capture_default_str();
  app.add_option("--sparse-calls", config.sparse_calls, "calls per sparse repetition")
      ->capture_default_str();
  app.add_option("--sparse-reps", config.sparse_reps, "sparse repetitions (median reported)")
      ->capture_default_str();
  app.add_option("--json", config.json_path, "write the results as JSON to this path");
  app.add_option("--ps-binary", config.ps_binary, "path to tj-ps")->capture_default_str();
  app.add_option("--ps-log", config.ps_log, "where tj-ps's log goes (default /dev/null)");
  app.add_flag("--quick,--smoke", config.quick,
               "seconds: checks that the benchmark runs; the figures are not meaningful");
  CLI11_PARSE(app, argc, argv);
  if (config.reps < 1 || config.bytes_per_rep < 1 || config.max_calls_per_rep < 1 ||
      config.iperf_seconds < 1 || config.batch < 1 || config.sparse_calls < 1 ||
      config.sparse_reps < 1) {
    std::fprintf(stderr, "tj-bench-ps: counts and durations must be positive\n");
    return 2;
  }
  spdlog::set_level(spdlog::level::warn);
  return tj::bench::Run(std::move(config));
}
