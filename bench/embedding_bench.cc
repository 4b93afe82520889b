// tj-bench-embedding: memory and lookup speed of embedding tables at scale (issue 15, item 4), each
// against baselines measured in the same run:
//   - raw: the row values alone in one flat array (rows x dim x 4 bytes), the bytes every layout is
//     divided by, and a memcpy lookup from it (the speed of memory itself);
//   - before: the layout of Session 6 (an index of 12-byte slots {id, row} at a load of 3/8..3/4,
//     doubling; rows without their ids), rebuilt here as it was, driven the same way;
//   - table: EmbeddingTable as it is now (ids stored with rows, 4-byte index slots).
// Each in-process measurement runs in a fresh child process (fork), so RSS starts from a clean
// heap: bytes a row = (RSS with every row - RSS before) / rows; lookups/s = one thread looking up
// existing ids in a random order, batches of 4096, i.e. one PS shard's table serving lookups.
// With --ps N, N real tj-ps processes are filled with the rows through PsClient Lookups (each id
// to the task PsTaskOfId gives, as the sharded client does) and each one's RSS growth is reported
// against its raw row bytes.
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "bench/bench_support.h"
#include "coordinator/ps/embedding_table.h"
#include "coordinator/ps/id_hash.h"
#include "coordinator/ps/ps_client.h"
#include "coordinator/ps/variable_spec.h"

namespace tj::bench {
namespace {

constexpr int64_t kDim = 16;
constexpr size_t kBatch = 4096;

int64_t Rss(const std::string& pid = "self") { return ProcStatusBytes(pid, "VmRSS"); }

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Distinct ids spread over the int64 range (hashed feature ids).
int64_t IdOf(int64_t i) { return static_cast<int64_t>(static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ULL); }

// The ids of a random-order pass over `rows` existing rows, `n` of them.
std::vector<int64_t> ProbeIds(int64_t rows, int64_t n) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  uint64_t x = 88172645463325252ULL;
  for (auto& id : ids) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    id = IdOf(static_cast<int64_t>(x % static_cast<uint64_t>(rows)));
  }
  return ids;
}

// The layout before this change, as coordinator/ps/row_index.* and embedding_table.* had it (SGD:
// a row is dim floats; chunks of 64 KiB; 16 shards with a lock each).
class BeforeTable {
 public:
  static constexpr uint32_t kNoRow = UINT32_MAX;

  void Lookup(const int64_t* ids, size_t n, float* out) {
    for (size_t i = 0; i < n; ++i) {
      const uint64_t hash = RowHash(ids[i]);
      Shard& shard = shards_[hash >> 60];
      std::lock_guard lock(shard.mu);
      std::memcpy(out + i * kDim, FindOrCreate(shard, ids[i], hash), kDim * sizeof(float));
    }
  }

 private:
  static constexpr int kChunkRows = 1024;  // 64 KiB of 16 floats
  struct Shard {
    std::mutex mu;
    std::vector<int64_t> ids = std::vector<int64_t>(16);
    std::vector<uint32_t> rows = std::vector<uint32_t>(16, kNoRow);
    size_t mask = 15;
    size_t size = 0;
    std::vector<std::unique_ptr<float[]>> chunks;
    uint32_t num_rows = 0;
  };

  static void Grow(Shard& s) {
    std::vector<int64_t> old_ids = std::move(s.ids);
    std::vector<uint32_t> old_rows = std::move(s.rows);
    const size_t slots = old_rows.size() * 2;
    s.ids.assign(slots, 0);
    s.rows.assign(slots, kNoRow);
    s.mask = slots - 1;
    for (size_t j = 0; j < old_rows.size(); ++j) {
      if (old_rows[j] == kNoRow) continue;
      size_t i = RowHash(old_ids[j]) & s.mask;
      while (s.rows[i] != kNoRow) i = (i + 1) & s.mask;
      s.ids[i] = old_ids[j];
      s.rows[i] = old_rows[j];
    }
  }

  float* FindOrCreate(Shard& s, int64_t id, uint64_t hash) {
    if ((s.size + 1) * 4 > s.rows.size() * 3) Grow(s);
    for (size_t i = hash & s.mask;; i = (i + 1) & s.mask) {
      if (s.rows[i] == kNoRow) {
        const uint32_t row = s.num_rows++;
        s.ids[i] = id;
        s.rows[i] = row;
        ++s.size;
        if (row / kChunkRows == s.chunks.size()) {
          s.chunks.push_back(std::make_unique_for_overwrite<float[]>(kChunkRows * kDim));
        }
        float* data = s.chunks[row / kChunkRows].get() + (row % kChunkRows) * kDim;
        std::fill_n(data, kDim, 0.01f);
        return data;
      }
      if (s.ids[i] == id) {
        const uint32_t row = s.rows[i];
        return s.chunks[row / kChunkRows].get() + (row % kChunkRows) * kDim;
      }
    }
  }

  std::array<Shard, 16> shards_;
};

struct Config {
  int64_t rows = 10'000'000;
  int64_t probes = 5'000'000;
  int num_ps = 0;
  std::string ps_binary = TJ_PS_BINARY;
  std::string only;  // raw, before, table: one layout only
};

// Creates `rows` rows through `lookup` in batches, then times `probes` lookups of existing ones.
template <typename Lookup>
void Measure(const char* label, const Config& config, Lookup&& lookup) {
  std::vector<float> out(kBatch * kDim);
  const int64_t rss_before = Rss();
  std::vector<int64_t> ids(kBatch);
  const auto created = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < config.rows; i += static_cast<int64_t>(kBatch)) {
    const size_t n = static_cast<size_t>(std::min<int64_t>(kBatch, config.rows - i));
    for (size_t j = 0; j < n; ++j) ids[j] = IdOf(i + static_cast<int64_t>(j));
    lookup(ids.data(), n, out.data());
  }
  const double create_s = Seconds(created);
  const int64_t grown = Rss() - rss_before;
  const std::vector<int64_t> probes = ProbeIds(config.rows, config.probes);
  const auto looked_up = std::chrono::steady_clock::now();
  for (size_t i = 0; i < probes.size(); i += kBatch) {
    lookup(probes.data() + i, std::min(kBatch, probes.size() - i), out.data());
  }
  const double lookup_s = Seconds(looked_up);
  const double raw = static_cast<double>(config.rows * kDim * 4);
  std::printf("  %-34s %10.1f %10.2f %14.2f %14.2f\n", label,
              static_cast<double>(grown) / static_cast<double>(config.rows),
              static_cast<double>(grown) / raw, static_cast<double>(config.rows) / create_s / 1e6,
              static_cast<double>(probes.size()) / lookup_s / 1e6);
  std::fflush(stdout);
}

void InChild(const std::function<void()>& fn) {
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    fn();
    std::fflush(stdout);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::printf("  (child failed: %d)\n", status);
}

TableConfig SgdTable() {
  v1::TableSpec spec;
  spec.set_name("embedding");
  spec.set_dim(kDim);
  // A constant, as the layout before is filled here: creation then times the structures alone.
  spec.mutable_initializer()->set_kind(v1::Initializer::CONSTANT);
  spec.mutable_initializer()->set_value(0.01f);
  spec.mutable_optimizer()->mutable_sgd()->set_learning_rate(0.1f);
  absl::StatusOr<TableConfig> config = CheckTableSpec(spec);
  if (!config.ok()) std::abort();
  return *config;
}

// N tj-ps processes filled through PsClient Lookups; RSS growth of each against its raw rows.
int MeasureProcesses(const Config& config) {
  std::vector<std::unique_ptr<WorkerProcess>> processes;
  std::vector<std::shared_ptr<PsClient>> clients;
  std::vector<int64_t> idle;
  PsClientOptions options;
  options.rpc_timeout = absl::Seconds(120);
  v1::CreateVariablesRequest create;
  v1::TableSpec* spec = create.add_tables();
  spec->set_name("embedding");
  spec->set_dim(kDim);
  spec->mutable_initializer()->set_kind(v1::Initializer::CONSTANT);
  spec->mutable_initializer()->set_value(0.01f);
  spec->mutable_optimizer()->mutable_sgd()->set_learning_rate(0.1f);
  for (int task = 0; task < config.num_ps; ++task) {
    auto process = WorkerProcess::Start(config.ps_binary, task, "");
    if (!process.ok()) {
      std::fprintf(stderr, "tj-ps: %s\n", process.status().ToString().c_str());
      return 1;
    }
    clients.push_back(PsClient::Connect((*process)->address(), task, options));
    if (!clients.back()->WaitForHealth(absl::Seconds(30)).ok() ||
        !clients.back()->Create(create).ok()) {
      return 1;
    }
    idle.push_back(Rss(std::to_string((*process)->pid())));
    processes.push_back(*std::move(process));
  }
  constexpr size_t kRpcIds = 65536;
  std::vector<v1::LookupRequest> requests(static_cast<size_t>(config.num_ps));
  std::vector<int64_t> rows(static_cast<size_t>(config.num_ps), 0);
  auto flush = [&](int task) -> bool {
    v1::LookupRequest& request = requests[static_cast<size_t>(task)];
    if (request.lookups_size() == 0 || request.lookups(0).ids().empty()) return true;
    if (!clients[static_cast<size_t>(task)]->Lookup(request).ok()) return false;
    request.mutable_lookups(0)->clear_ids();
    return true;
  };
  for (auto& request : requests) request.add_lookups()->set_table("embedding");
  const auto started = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < config.rows; ++i) {
    const int64_t id = IdOf(i);
    const int task = PsTaskOfId(id, config.num_ps);
    std::string* ids = requests[static_cast<size_t>(task)].mutable_lookups(0)->mutable_ids();
    ids->append(reinterpret_cast<const char*>(&id), sizeof(id));
    ++rows[static_cast<size_t>(task)];
    if (ids->size() >= kRpcIds * sizeof(int64_t) && !flush(task)) return 1;
  }
  for (int task = 0; task < config.num_ps; ++task) {
    if (!flush(task)) return 1;
  }
  const double create_s = Seconds(started);
  int64_t total_grown = 0;
  for (int task = 0; task < config.num_ps; ++task) {
    const auto t = static_cast<size_t>(task);
    const int64_t grown = Rss(std::to_string(processes[t]->pid())) - idle[t];
    total_grown += grown;
    std::printf("  tj-ps task %d: %lld rows, RSS +%.1f MiB, %.1f B/row, %.3f x raw\n", task,
                static_cast<long long>(rows[t]), static_cast<double>(grown) / (1 << 20),
                static_cast<double>(grown) / static_cast<double>(rows[t]),
                static_cast<double>(grown) / static_cast<double>(rows[t] * kDim * 4));
  }
  std::printf("  all %d PS: %lld rows, RSS +%.1f MiB (raw %.1f MiB): %.3f x raw, created at "
              "%.2f M rows/s over gRPC\n",
              config.num_ps, static_cast<long long>(config.rows),
              static_cast<double>(total_grown) / (1 << 20),
              static_cast<double>(config.rows * kDim * 4) / (1 << 20),
              static_cast<double>(total_grown) / static_cast<double>(config.rows * kDim * 4),
              static_cast<double>(config.rows) / create_s / 1e6);
  return 0;
}

int Run(const Config& config) {
  std::printf(
      "tj-bench-embedding: %lld rows of dim %lld (SGD), raw row bytes %.1f MiB; %lld lookups of "
      "existing ids in random order, batches of %zu, one thread\n",
      static_cast<long long>(config.rows), static_cast<long long>(kDim),
      static_cast<double>(config.rows * kDim * 4) / (1 << 20),
      static_cast<long long>(config.probes), kBatch);
  std::printf("  %-34s %10s %10s %14s %14s\n", "layout", "B/row", "x raw", "create M/s",
              "lookup M ids/s");
  if (config.only.empty() || config.only == "raw") {
    InChild([&] {
      // The baseline: one array of the rows, id i at row i, no index at all.
      std::unique_ptr<float[]> rows;
      Measure("raw (flat array, no index)", config, [&](const int64_t* ids, size_t n, float* out) {
        if (rows == nullptr) {
          rows = std::make_unique_for_overwrite<float[]>(static_cast<size_t>(config.rows * kDim));
        }
        for (size_t i = 0; i < n; ++i) {
          const uint64_t row =
              static_cast<uint64_t>(ids[i]) * 0xF1DE83E19937733DULL % static_cast<uint64_t>(config.rows);
          float* data = rows.get() + row * kDim;
          if (data[0] != 0.01f) std::fill_n(data, kDim, 0.01f);
          std::memcpy(out + i * kDim, data, kDim * sizeof(float));
        }
      });
    });
  }
  if (config.only.empty() || config.only == "before") {
    InChild([&] {
      auto table = std::make_unique<BeforeTable>();
      Measure("before (12-byte index slots)", config,
              [&](const int64_t* ids, size_t n, float* out) { table->Lookup(ids, n, out); });
    });
  }
  if (config.only.empty() || config.only == "table") {
    InChild([&] {
      auto table = std::make_unique<EmbeddingTable>(SgdTable());
      Measure("table (EmbeddingTable, now)", config,
              [&](const int64_t* ids, size_t n, float* out) {
                if (!table->Lookup(reinterpret_cast<const char*>(ids), n,
                                   reinterpret_cast<char*>(out))
                         .ok()) {
                  std::abort();
                }
              });
      std::printf("  %-34s %10.1f (EmbeddingTable::memory_bytes)\n", "  accounted",
                  static_cast<double>(table->memory_bytes()) / static_cast<double>(config.rows));
    });
  }
  std::printf(
      "  (B/row: RSS growth / rows; x raw: over rows x %lld x 4 B; the raw array's rows are "
      "placed by a multiplicative hash, not looked up)\n",
      static_cast<long long>(kDim));
  if (config.num_ps > 0) {
    std::printf("\n%d tj-ps processes, the rows spread by PsTaskOfId:\n", config.num_ps);
    return MeasureProcesses(config);
  }
  return 0;
}

}  // namespace
}  // namespace tj::bench

int main(int argc, char** argv) {
  tj::bench::Config config;
  CLI::App app{"tj-bench-embedding: embedding table memory and lookup speed at scale"};
  app.add_option("--rows", config.rows, "rows to create (all layouts)");
  app.add_option("--probes", config.probes, "lookups of existing rows to time");
  app.add_option("--ps", config.num_ps, "also fill this many real tj-ps processes");
  app.add_option("--ps-binary", config.ps_binary, "the tj-ps executable");
  app.add_option("--only", config.only, "raw, before or table: measure one layout only");
  CLI11_PARSE(app, argc, argv);
  if (config.rows < 1 || config.probes < 1) {
    std::fprintf(stderr, "tj-bench-embedding: --rows and --probes must be >= 1\n");
    return 2;
  }
  return tj::bench::Run(config);
}
