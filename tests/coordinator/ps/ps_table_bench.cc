// ps_table_bench: a test-free micro benchmark of the PS data structures (not run by ctest; build
// the ps_table_bench target and run it by hand). Prints RSS per million rows of an embedding table
// (dim 16) next to a node-based std::unordered_map<id, std::vector<float>>, lookup throughput in
// the store and over gRPC, and dense pull/push bandwidth of a 64 MiB variable over loopback.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "coordinator/base/values.h"
#include "coordinator/ps/embedding_table.h"
#include "coordinator/ps/ps_client.h"
#include "coordinator/ps/ps_server.h"
#include "coordinator/ps/variable_spec.h"
#include "spdlog/spdlog.h"
#include "tests/coordinator/ps/ps_test_values.h"

namespace tj {
namespace {

constexpr int64_t kRows = 1'000'000;
constexpr int64_t kDim = 16;

double RssMiB() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

double Seconds(const std::function<void()>& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Runs `fn` in a child process, so that each RSS measurement starts from a clean heap.
void InChild(const std::function<void()>& fn) {
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    fn();
    std::fflush(stdout);
    _exit(0);
  }
  waitpid(pid, nullptr, 0);
}

std::vector<int64_t> Ids(int64_t n, int64_t salt) {
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = i * 2654435761LL + salt;
  return ids;
}

void TableRss(const char* label, v1::Optimizer optimizer) {
  const double before = RssMiB();
  auto config = CheckTableSpec(testing::Table("t", kDim, testing::ConstantInit(0.01f), optimizer));
  EmbeddingTable table(*config);
  const std::vector<int64_t> ids = Ids(kRows, 0);
  std::vector<float> out(static_cast<size_t>(kDim) * 10000);
  const double create = Seconds([&] {
    for (size_t i = 0; i < ids.size(); i += 10000) {
      (void)table.Lookup(reinterpret_cast<const char*>(ids.data() + i), 10000,
                         reinterpret_cast<char*>(out.data()));
    }
  });
  const double lookup = Seconds([&] {
    for (size_t i = 0; i < ids.size(); i += 10000) {
      (void)table.Lookup(reinterpret_cast<const char*>(ids.data() + i), 10000,
                         reinterpret_cast<char*>(out.data()));
    }
  });
  const double ids_mib = static_cast<double>(ids.size() * sizeof(int64_t)) / (1 << 20);
  std::printf(
      "%-34s RSS %6.1f MiB per 1M rows (%5.1f B/row; accounted %5.1f B/row); "
      "create %.2f M rows/s, lookup %.2f M ids/s\n",
      label, RssMiB() - before - ids_mib, (RssMiB() - before - ids_mib) * (1 << 20) / kRows,
      static_cast<double>(table.memory_bytes()) / kRows, kRows / create / 1e6,
      kRows / lookup / 1e6);
}

void UnorderedMapRss() {
  const double before = RssMiB();
  std::unordered_map<int64_t, std::vector<float>> rows;
  for (int64_t id : Ids(kRows, 0)) rows.emplace(id, std::vector<float>(kDim, 0.01f));
  const double ids_mib = static_cast<double>(kRows * sizeof(int64_t)) / (1 << 20);
  std::printf("%-34s RSS %6.1f MiB per 1M rows (%5.1f B/row)\n", "unordered_map<id, vector<float>>",
              RssMiB() - before - ids_mib, (RssMiB() - before - ids_mib) * (1 << 20) / kRows);
}

void OverGrpc() {
  auto server = PsServer::Start("127.0.0.1:0", 0);
  auto client = PsClient::Connect((*server)->address(), 0);
  v1::CreateVariablesRequest create;
  *create.add_tables() = testing::Table("t", kDim, testing::ConstantInit(0.01f));
  *create.add_variables() = testing::InitializedVariable("dense", {16 << 20}, {});
  if (!client->Create(create).ok()) return;
  constexpr int64_t kBatch = 8192;
  const std::vector<int64_t> ids = Ids(kRows, 7);
  const v1::LookupRequest warm = testing::LookupRequest({{"t", ids}});
  (void)client->Lookup(warm);  // rows exist from here on
  std::vector<v1::LookupRequest> batches;
  for (int64_t i = 0; i < kRows; i += kBatch) {
    batches.push_back(testing::LookupRequest(
        {{"t", std::vector<int64_t>(ids.begin() + i, ids.begin() + std::min(kRows, i + kBatch))}}));
  }
  const double lookup = Seconds([&] {
    for (const auto& batch : batches) (void)client->Lookup(batch);
  });
  std::printf("gRPC Lookup, batches of %ld ids, dim %ld: %.2f M ids/s\n", kBatch, kDim,
              kRows / lookup / 1e6);
  constexpr int kRounds = 5;
  const double pull = Seconds([&] {
    for (int i = 0; i < kRounds; ++i) (void)client->Pull({"dense"});
  });
  const v1::Tensor delta = FloatTensor(std::vector<float>(16 << 20, 1.0f), {16 << 20});
  const double push = Seconds([&] {
    for (int i = 0; i < kRounds; ++i) (void)client->Push({"dense"}, {delta});
  });
  std::printf("dense 64 MiB over loopback: pull %.0f MiB/s, push %.0f MiB/s\n",
              64.0 * kRounds / pull, 64.0 * kRounds / push);
}

}  // namespace
}  // namespace tj

int main() {
  spdlog::set_level(spdlog::level::warn);
  tj::InChild([] { tj::TableRss("EmbeddingTable dim 16, SGD", tj::testing::SgdOptimizer(0.1f)); });
  tj::InChild(
      [] { tj::TableRss("EmbeddingTable dim 16, Adam", tj::testing::AdamOptimizer(0.1f)); });
  tj::InChild([] { tj::UnorderedMapRss(); });
  tj::InChild([] { tj::OverGrpc(); });
  return 0;
}
