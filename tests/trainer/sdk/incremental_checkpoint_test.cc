// Incremental checkpoints through PsCheckpointer against in-process PS servers: a full checkpoint
// every `full_every`, deltas between; the newest restores bit for bit what the PS held (optimizer
// slots and steps included); retention keeps the full save and deltas a kept checkpoint needs and
// nothing more; a delta missing is DataLoss naming the file and the checkpoint before is restored.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/base/values.h"
#include "coordinator/checkpoint/checkpoint_store.h"
#include "coordinator/ps/ps_client.h"
#include "coordinator/ps/ps_server.h"
#include "tests/coordinator/ps/ps_state_view.h"
#include "tests/coordinator/ps/ps_test_values.h"
#include "tests/support/temp_dir.h"
#include "tests/trainer/sdk/in_process_ps_cluster.h"
#include "trainer/sdk/ps_checkpointer.h"

namespace tj::sdk {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tj::testing::TempDir;
using ::tj::testing::ViewOf;

constexpr int kNumPs = 2;

struct Cluster : tj::testing::InProcessPsCluster {
  static Cluster Start() {
    Cluster cluster;
    cluster.StartServers(kNumPs);
    return cluster;
  }

  void Create() const {
    v1::CreateVariablesRequest create = testing::CreateRequest({testing::InitializedVariable(
        "dense", {3}, testing::NormalInit(1), testing::AdamOptimizer(0.01f))});
    *create.add_tables() =
        testing::Table("emb", 4, testing::NormalInit(2), testing::AdamOptimizer(0.05f));
    for (const auto& client : clients) ASSERT_TRUE(client->Create(create).ok());
  }

  // Pushes to `n` rows from `first` (and, with `dense`, the dense variable) on every PS.
  void Train(int64_t first, int64_t n, float scale, bool dense = true) const {
    std::vector<int64_t> ids;
    std::vector<float> grads;
    for (int64_t i = 0; i < n; ++i) {
      ids.push_back((first + i) * 104729);
      for (int j = 0; j < 4; ++j) grads.push_back(scale * static_cast<float>(i % 3 + 1) - j);
    }
    for (const auto& client : clients) {
      ASSERT_TRUE(client->PushSparse(testing::SparsePush("emb", ids, grads)).ok());
      if (!dense) continue;
      ASSERT_TRUE(
          client->Push({"dense"}, {FloatTensor(std::vector<float>{scale, 1, 2}, {3})}).ok());
    }
  }
};

std::string StepDir(const std::string& root, int64_t step) {
  return absl::StrCat(root, "/ckpt-", std::string(12 - std::to_string(step).size(), '0'), step);
}

std::vector<int64_t> StepsOnDisk(const std::string& root) {
  absl::StatusOr<std::vector<CheckpointListing>> listings = CheckpointStore(root, 1).List();
  EXPECT_TRUE(listings.ok()) << listings.status();
  std::vector<int64_t> steps;
  if (!listings.ok()) return steps;
  for (const CheckpointListing& listing : *listings) steps.push_back(listing.step);
  return steps;
}

// Same size, another CRC.
void FlipAByteInTheMiddle(const std::string& path) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  const auto at = static_cast<std::streamoff>(std::filesystem::file_size(path) / 2);
  file.seekg(at);
  const char byte = static_cast<char>(file.get());
  file.seekp(at);
  file.put(static_cast<char>(byte ^ 0x10));
}

TEST(IncrementalCheckpointTest, DeltasBetweenFullCheckpointsRestoreBitForBit) {
  Cluster cluster = Cluster::Start();
  cluster.Create();
  cluster.Train(0, 2000, 1.0f);
  TempDir dir;
  PsCheckpointer checkpointer(dir.path(), 10, cluster.clients, /*full_every=*/3);
  std::vector<int> deltas;
  std::vector<int64_t> bytes;
  for (int64_t step = 1; step <= 5; ++step) {
    if (step > 1) cluster.Train(step * 10, 20, static_cast<float>(step));
    auto saved = checkpointer.Save(step, {{"step", step}});
    ASSERT_TRUE(saved.ok()) << saved.status();
    deltas.push_back(saved->deltas);
    bytes.push_back(saved->bytes);
  }
  // Full, delta, delta, full, delta; a delta of 20 changed rows of 2000 is far smaller.
  EXPECT_THAT(deltas, ElementsAre(0, kNumPs, kNumPs, 0, kNumPs));
  EXPECT_LT(bytes[1] * 10, bytes[0]);
  const auto states = cluster.States();

  Cluster fresh = Cluster::Start();
  PsCheckpointer restorer(dir.path(), 10, fresh.clients, 3);
  auto restored = restorer.RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_TRUE(restored->has_value());
  EXPECT_EQ((*restored)->step, 5);
  EXPECT_EQ((*restored)->state, (nlohmann::json{{"step", 5}}));
  EXPECT_TRUE(fresh.States() == states);

  // The restoring coordinator continues the chain: a delta since step 5.
  fresh.Train(7, 1, 1.0f);
  auto next = restorer.Save(6, {{"step", 6}});
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->deltas, kNumPs);
  Cluster third = Cluster::Start();
  ASSERT_TRUE(PsCheckpointer(dir.path(), 10, third.clients, 3).RestoreLatest().ok());
  EXPECT_TRUE(third.States() == fresh.States());
}

// Checkpoints whose dense variable was not pushed since the one before do not rewrite it: the
// delta is its changed rows alone, and the chain (the dense variable from the full save, rows
// from each delta) restores the very state the PS held.
TEST(IncrementalCheckpointTest, ADenseVariableNotPushedSinceIsTakenFromTheEarlierFile) {
  Cluster cluster = Cluster::Start();
  v1::CreateVariablesRequest create = testing::CreateRequest({testing::InitializedVariable(
      "dense", {250'000}, testing::NormalInit(1), testing::AdamOptimizer(0.01f))});
  *create.add_tables() =
      testing::Table("emb", 4, testing::NormalInit(2), testing::AdamOptimizer(0.05f));
  for (const auto& client : cluster.clients) ASSERT_TRUE(client->Create(create).ok());
  cluster.Train(0, 100, 1.0f, /*dense=*/false);
  TempDir dir;
  PsCheckpointer checkpointer(dir.path(), 10, cluster.clients, /*full_every=*/10);
  auto full = checkpointer.Save(1, {{"step", 1}});
  ASSERT_TRUE(full.ok()) << full.status();
  cluster.Train(10, 5, 2.0f, /*dense=*/false);
  auto rows_only = checkpointer.Save(2, {{"step", 2}});
  ASSERT_TRUE(rows_only.ok()) << rows_only.status();
  EXPECT_EQ(rows_only->deltas, kNumPs);
  // The dense variable and its two Adam slots are 3 MB a PS; the delta is a few KiB.
  EXPECT_GT(full->bytes, kNumPs * 3 * 1'000'000);
  EXPECT_LT(rows_only->bytes, 64 * 1024);
  const auto states = cluster.States();

  Cluster fresh = Cluster::Start();
  auto restored = PsCheckpointer(dir.path(), 10, fresh.clients, 10).RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_TRUE(restored->has_value());
  EXPECT_EQ((*restored)->step, 2);
  EXPECT_TRUE(fresh.States() == states);
}

TEST(IncrementalCheckpointTest, KeepRetainsWhatAKeptCheckpointNeedsAndNothingMore) {
  Cluster cluster = Cluster::Start();
  cluster.Create();
  TempDir dir;
  PsCheckpointer checkpointer(dir.path(), /*keep=*/1, cluster.clients, /*full_every=*/3);
  for (int64_t step = 1; step <= 3; ++step) {
    cluster.Train(step, 5, 1.0f);
    ASSERT_TRUE(checkpointer.Save(step, {{"step", step}}).ok());
  }
  // Step 3 is a delta on 2, a delta on 1 (full): all three stay with keep 1.
  EXPECT_THAT(StepsOnDisk(dir.path()), ElementsAre(1, 2, 3));
  cluster.Train(4, 5, 1.0f);
  ASSERT_TRUE(checkpointer.Save(4, {{"step", 4}}).ok());  // full: the old chain goes
  EXPECT_THAT(StepsOnDisk(dir.path()), ElementsAre(4));
  cluster.Train(5, 5, 1.0f);
  ASSERT_TRUE(checkpointer.Save(5, {{"step", 5}}).ok());
  EXPECT_THAT(StepsOnDisk(dir.path()), ElementsAre(4, 5));
  // Step 4 is kept for 5's sake but is a checkpoint of its own too.
  auto latest = CheckpointStore(dir.path(), 1).LatestValid();
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->step, 5);
}

TEST(IncrementalCheckpointTest, AMissingDeltaIsDataLossNamingItAndTheCheckpointBeforeIsRestored) {
  Cluster cluster = Cluster::Start();
  cluster.Create();
  TempDir dir;
  PsCheckpointer checkpointer(dir.path(), 10, cluster.clients, /*full_every=*/5);
  std::vector<std::vector<testing::StoreStateView>> states;
  for (int64_t step = 1; step <= 3; ++step) {
    cluster.Train(step * 100, 10, static_cast<float>(step));
    ASSERT_TRUE(checkpointer.Save(step, {{"step", step}}).ok());
    states.push_back(cluster.States());
  }
  const std::string missing = StepDir(dir.path(), 2) + "/" + PsCheckpointer::ShardName(1, kNumPs);
  ASSERT_TRUE(std::filesystem::remove(missing));
  CheckpointStore store(dir.path(), 10);
  // Step 3 needs step 2's delta: it is not restorable, and neither is 2.
  const absl::Status three = store.Load(3).status();
  EXPECT_EQ(three.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(three.message(), HasSubstr(missing));

  Cluster fresh = Cluster::Start();
  auto restored = PsCheckpointer(dir.path(), 10, fresh.clients, 5).RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_TRUE(restored->has_value());
  EXPECT_EQ((*restored)->step, 1);
  EXPECT_TRUE(fresh.States() == states[0]);
}

// The coordinator checks only sizes before a restore (ShardCheck::kSizeOnly); each PS checks the
// CRC of every file of its chain as it reads it. A delta whose size is right but whose bytes are
// not fails there (DataLoss naming it), and the restore falls back to a checkpoint without it.
TEST(IncrementalCheckpointTest, ADeltaThePsFindsCorruptFallsBackToACheckpointWithoutIt) {
  Cluster cluster = Cluster::Start();
  cluster.Create();
  TempDir dir;
  PsCheckpointer checkpointer(dir.path(), 10, cluster.clients, /*full_every=*/5);
  std::vector<std::vector<testing::StoreStateView>> states;
  for (int64_t step = 1; step <= 3; ++step) {
    cluster.Train(step * 100, 10, static_cast<float>(step));
    auto saved = checkpointer.Save(step, {{"step", step}});
    ASSERT_TRUE(saved.ok()) << saved.status();
    EXPECT_EQ(saved->deltas, step == 1 ? 0 : kNumPs);
    states.push_back(cluster.States());
  }
  // One byte near the end of step 2's delta of ps-0 (the rows' floats): same size, another CRC.
  const std::string corrupt = StepDir(dir.path(), 2) + "/" + PsCheckpointer::ShardName(0, kNumPs);
  FlipAByteInTheMiddle(corrupt);
  ASSERT_TRUE(CheckpointStore(dir.path(), 10).Load(3, ShardCheck::kSizeOnly).ok());

  Cluster fresh = Cluster::Start();
  auto restored = PsCheckpointer(dir.path(), 10, fresh.clients, 5).RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_TRUE(restored->has_value());
  EXPECT_EQ((*restored)->step, 1);
  EXPECT_TRUE(fresh.States() == states[0]);
}

// Along a long chain, a corrupt delta early in it fails the newest checkpoint's restore once; every
// checkpoint whose chain lists that delta is then passed over without being restored, and the
// newest one without it (here the full save) is restored: one retry, not one per checkpoint.
TEST(IncrementalCheckpointTest, ACorruptDeltaIsSkippedWithEveryCheckpointBuiltOnItInOneRetry) {
  Cluster cluster = Cluster::Start();
  cluster.Create();
  TempDir dir;
  PsCheckpointer checkpointer(dir.path(), 10, cluster.clients, /*full_every=*/10);
  std::vector<std::vector<testing::StoreStateView>> states;
  for (int64_t step = 1; step <= 6; ++step) {
    cluster.Train(step * 100, 10, static_cast<float>(step));
    ASSERT_TRUE(checkpointer.Save(step, {{"step", step}}).ok());
    states.push_back(cluster.States());
  }
  const std::string corrupt = StepDir(dir.path(), 2) + "/" + PsCheckpointer::ShardName(1, kNumPs);
  FlipAByteInTheMiddle(corrupt);

  Cluster fresh = Cluster::Start();
  auto restored = PsCheckpointer(dir.path(), 10, fresh.clients, 10).RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_TRUE(restored->has_value());
  EXPECT_EQ((*restored)->step, 1);
  EXPECT_THAT((*restored)->skipped, ElementsAre(StepDir(dir.path(), 6)));
  EXPECT_TRUE(fresh.States() == states[0]);
}

}  // namespace
}  // namespace tj::sdk
