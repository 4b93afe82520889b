// PsCheckpointer against real tj-ps processes whose checkpoint I/O is slowed down by the test-only
// TJ_TEST_SHARD_BYTES_PER_SECOND: a save that takes longer than the stall timeout (and the RPC
// deadline) succeeds while progress flows; a frozen PS (SIGSTOP) fails it with a stall error
// naming the PS; every PS saves at the same time; a PS SIGKILLed mid-save is reported lost and the
// previous checkpoint stays the one restored.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "coordinator/base/values.h"
#include "coordinator/checkpoint/checkpoint_store.h"
#include "coordinator/ps/ps_client.h"
#include "coordinator/ps/ps_error.h"
#include "tests/coordinator/checkpoint/log_capture.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait_for.h"
#include "tjctl/local/process.h"
#include "trainer/sdk/ps_checkpointer.h"

#ifndef TJ_PS_BINARY
#error "TJ_PS_BINARY must name the tj-ps executable"
#endif

namespace tj::sdk {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::tj::testing::TempDir;
using ::tj::testing::WaitFor;

constexpr int64_t kMiB = int64_t{1} << 20;
// Variables of 1 MiB: records of 1 MiB, so a throttled PS reports progress often.
constexpr int64_t kFloatsPerVariable = kMiB / 4;
// Short enough for a quick test, long enough that a throttled save clearly outlasts them.
constexpr absl::Duration kStallTimeout = absl::Milliseconds(1500);
constexpr absl::Duration kRpcDeadline = absl::Seconds(1);

struct Ps {
  local::ChildProcess process;
  std::shared_ptr<PsClient> client;
};

// A real tj-ps on 127.0.0.1 whose shard files are written and read at `bytes_per_second` (0: as
// fast as the disk), holding `variables` dense variables of 1 MiB.
Ps StartPs(int task, int64_t bytes_per_second, int variables) {
  std::map<std::string, std::string> env;
  if (bytes_per_second > 0) env["TJ_TEST_SHARD_BYTES_PER_SECOND"] = absl::StrCat(bytes_per_second);
  auto process = local::ChildProcess::StartAndWaitListening(
      TJ_PS_BINARY, {"--address=127.0.0.1:0", absl::StrCat("--task=", task)}, env);
  EXPECT_TRUE(process.ok()) << process.status();
  if (!process.ok()) std::abort();
  PsClientOptions options;
  options.rpc_timeout = kRpcDeadline;
  options.shard_stall_timeout = kStallTimeout;
  std::shared_ptr<PsClient> client = PsClient::Connect(process->address(), task, options);
  std::vector<v1::VariableSpec> specs;
  for (int i = 0; i < variables; ++i) {
    v1::VariableSpec spec;
    spec.set_name(absl::StrCat("v", i));
    spec.add_shape(kFloatsPerVariable);
    spec.mutable_initializer()->set_kind(v1::Initializer::RANDOM_NORMAL);
    spec.mutable_initializer()->set_stddev(1.0f);
    spec.mutable_initializer()->set_seed(static_cast<uint64_t>(task * 100 + i + 1));
    specs.push_back(std::move(spec));
  }
  EXPECT_TRUE(client->CreateVariables(std::move(specs)).ok());
  return Ps{*std::move(process), std::move(client)};
}

std::vector<std::shared_ptr<PsClient>> Clients(const std::vector<Ps*>& ps) {
  std::vector<std::shared_ptr<PsClient>> clients;
  for (Ps* p : ps) clients.push_back(p->client);
  return clients;
}

// Temporary shard files (a save in progress) in `dir`, by shard name.
std::vector<std::string> ShardsBeingWritten(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    const size_t tmp = name.find(".tmp-");
    if (tmp != std::string::npos) names.push_back(name.substr(0, tmp));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string StepDir(const std::string& root, int64_t step) {
  return absl::StrCat(root, "/ckpt-", std::string(12 - std::to_string(step).size(), '0'), step);
}

TEST(PsCheckpointerProcessTest, ASlowSaveOutlastsTheStallTimeoutAndTheDeadlineWhileProgressFlows) {
  // 12 MiB at 3 MiB/s: about 4 s, against a 1.5 s stall timeout and a 1 s RPC deadline.
  Ps ps = StartPs(0, 3 * kMiB, 12);
  TempDir dir;
  grpc::ClientContext context;
  std::vector<int64_t> reported;
  auto saved = ps.client->SaveShard(context, dir.Join("shard"), [&](const v1::ShardProgress& p) {
    reported.push_back(p.bytes());
  });
  ASSERT_TRUE(saved.ok()) << saved.status();
  EXPECT_GT(saved->bytes(), 12 * kMiB);
  EXPECT_EQ(static_cast<int64_t>(std::filesystem::file_size(dir.Join("shard"))), saved->bytes());
  // Progress came on the way, growing.
  ASSERT_GE(reported.size(), 3u);
  EXPECT_TRUE(std::is_sorted(reported.begin(), reported.end()));
  EXPECT_LE(reported.back(), saved->bytes());

  // The restore is throttled alike and reports the file's size as its total.
  grpc::ClientContext restore_context;
  std::vector<v1::ShardProgress> restore_reports;
  auto restored =
      ps.client->RestoreShard(restore_context, dir.Join("shard"),
                              [&](const v1::ShardProgress& p) { restore_reports.push_back(p); });
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(restored->num_variables(), 12);
  ASSERT_GE(restore_reports.size(), 3u);
  EXPECT_EQ(restore_reports.back().total_bytes(), saved->bytes());
}

TEST(PsCheckpointerProcessTest, EveryPsSavesAtTheSameTimeAndTheCheckpointRestores) {
  Ps ps0 = StartPs(0, 2 * kMiB, 4);
  Ps ps1 = StartPs(1, 2 * kMiB, 4);
  TempDir dir;
  PsCheckpointer checkpointer(dir.path(), 3, Clients({&ps0, &ps1}));
  std::optional<absl::StatusOr<SavedCheckpoint>> saved;
  std::thread save([&] { saved = checkpointer.Save(7, {{"step", 7}}); });
  // Each shard takes about 2 s to write; one after the other, both would never be in progress at
  // once.
  const bool both = WaitFor(
      [&] {
        return ShardsBeingWritten(StepDir(dir.path(), 7)) ==
               std::vector<std::string>{"ps-0-of-2.state", "ps-1-of-2.state"};
      },
      absl::Seconds(30));
  save.join();
  EXPECT_TRUE(both) << "the two PS tasks never wrote their shards at the same time";
  ASSERT_TRUE(saved->ok()) << saved->status();

  auto pulled = ps1.client->Pull({"v3"});
  ASSERT_TRUE(pulled.ok());
  ASSERT_TRUE(ps1.client->Push({"v3"}, {(*pulled)[0]}).ok());  // doubles v3
  auto restored = checkpointer.RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_TRUE(restored->has_value());
  EXPECT_EQ((*restored)->step, 7);
  auto after = ps1.client->Pull({"v3"});
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)[0].data(), (*pulled)[0].data());
}

// The coordinator no longer reads a shard to verify it before a PS reads it again: the PS checks the
// manifest's CRC as it restores. A shard whose size is right but whose bytes are not is found
// there (DataLoss naming the file), and every PS is restored from the previous checkpoint instead.
TEST(PsCheckpointerProcessTest, AShardThePsFindsCorruptFallsBackToThePreviousCheckpoint) {
  Ps ps0 = StartPs(0, 0, 2);
  Ps ps1 = StartPs(1, 0, 2);
  TempDir dir;
  PsCheckpointer checkpointer(dir.path(), 3, Clients({&ps0, &ps1}));
  ASSERT_TRUE(checkpointer.Save(5, {{"step", 5}}).ok());
  auto at5 = ps0.client->Pull({"v1"});
  ASSERT_TRUE(at5.ok());
  ASSERT_TRUE(ps0.client->Push({"v1"}, {(*at5)[0]}).ok());
  ASSERT_TRUE(checkpointer.Save(9, {{"step", 9}}).ok());
  // One byte deep inside ps-0's newest shard (a float of v1): its record's CRC no longer matches.
  const std::string corrupt = StepDir(dir.path(), 9) + "/ps-0-of-2.state";
  {
    std::fstream file(corrupt, std::ios::in | std::ios::out | std::ios::binary);
    const auto at = static_cast<std::streamoff>(std::filesystem::file_size(corrupt) - 1000);
    file.seekg(at);
    const char byte = static_cast<char>(file.get());
    file.seekp(at);
    file.put(static_cast<char>(byte ^ 0x10));
  }

  std::string log;
  absl::StatusOr<std::optional<RestoredCheckpoint>> restored;
  {
    ::tj::testing::LogCapture capture;
    restored = checkpointer.RestoreLatest();
    log = capture.text();
  }

  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_TRUE(restored->has_value());
  EXPECT_EQ((*restored)->step, 5);
  EXPECT_THAT(log, AllOf(HasSubstr("skipped, falling back"), HasSubstr(corrupt)));
  auto after = ps0.client->Pull({"v1"});
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)[0].data(), (*at5)[0].data());
}

TEST(PsCheckpointerProcessTest, AFrozenPsFailsTheSaveWithAStallErrorNamingIt) {
  Ps ps0 = StartPs(0, 0, 1);
  Ps ps1 = StartPs(1, 2 * kMiB, 8);
  TempDir dir;
  PsCheckpointer checkpointer(dir.path(), 3, Clients({&ps0, &ps1}));
  std::optional<absl::StatusOr<SavedCheckpoint>> saved;
  std::thread save([&] { saved = checkpointer.Save(3, {{"step", 3}}); });
  const bool writing = WaitFor(
      [&] {
        const auto names = ShardsBeingWritten(StepDir(dir.path(), 3));
        return std::find(names.begin(), names.end(), "ps-1-of-2.state") != names.end();
      },
      absl::Seconds(30));
  if (writing) ::kill(ps1.process.pid(), SIGSTOP);
  save.join();
  ASSERT_TRUE(writing);
  ASSERT_FALSE(saved->ok());
  EXPECT_EQ(PsTaskOf(saved->status()), 1) << saved->status();
  EXPECT_THAT(saved->status().message(),
              AllOf(HasSubstr("/job:ps/task:1"), HasSubstr(ps1.process.address()),
                    HasSubstr("stalled"), HasSubstr("no progress for 1.5s")));
  // Nothing a restore could take for a checkpoint.
  EXPECT_FALSE(std::filesystem::exists(StepDir(dir.path(), 3) + "/MANIFEST.json"));
  ::kill(ps1.process.pid(), SIGCONT);
}

TEST(PsCheckpointerProcessTest, APsKilledMidSaveIsLostAndThePreviousCheckpointIsRestored) {
  Ps ps = StartPs(0, 4 * kMiB, 8);
  TempDir dir;
  auto first = PsCheckpointer(dir.path(), 3, Clients({&ps})).Save(1, {{"step", 1}});
  ASSERT_TRUE(first.ok()) << first.status();
  auto at_first = ps.client->Pull({"v0"});
  ASSERT_TRUE(at_first.ok());
  ASSERT_TRUE(ps.client->Push({"v0"}, {(*at_first)[0]}).ok());

  PsCheckpointer checkpointer(dir.path(), 3, Clients({&ps}));
  std::optional<absl::StatusOr<SavedCheckpoint>> second;
  std::thread save([&] { second = checkpointer.Save(2, {{"step", 2}}); });
  const bool writing = WaitFor([&] { return !ShardsBeingWritten(StepDir(dir.path(), 2)).empty(); },
                               absl::Seconds(30));
  if (writing) ps.process.KillAndWait(SIGKILL);
  save.join();
  ASSERT_TRUE(writing);
  // A broken connection: the PS is lost (the coordinator exits with the restart code on this).
  ASSERT_FALSE(second->ok());
  EXPECT_EQ(PsTaskOf(second->status()), 0) << second->status();
  EXPECT_FALSE(std::filesystem::exists(StepDir(dir.path(), 2) + "/MANIFEST.json"));

  // The restarted PS gets the first checkpoint back.
  Ps restarted = StartPs(0, 0, 0);
  auto restored = PsCheckpointer(dir.path(), 3, Clients({&restarted})).RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_TRUE(restored->has_value());
  EXPECT_EQ((*restored)->step, 1);
  auto values = restarted.client->Pull({"v0"});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ((*values)[0].data(), (*at_first)[0].data());
}

// Pushes to `n` rows of table "emb" (created here when absent) and returns their values after.
std::vector<float> TrainRows(const PsClient& client, int64_t n, float scale) {
  v1::CreateVariablesRequest create;
  v1::TableSpec* table = create.add_tables();
  table->set_name("emb");
  table->set_dim(4);
  table->mutable_optimizer()->mutable_adam()->set_learning_rate(0.1f);
  EXPECT_TRUE(client.Create(create).ok());
  v1::PushSparseRequest push;
  v1::LookupRequest lookup;
  v1::SparseGradients* update = push.add_updates();
  update->set_table("emb");
  lookup.add_lookups()->set_table("emb");
  for (int64_t id = 0; id < n; ++id) {
    update->mutable_ids()->append(reinterpret_cast<const char*>(&id), sizeof(id));
    for (int j = 0; j < 4; ++j) {
      const float grad = scale * static_cast<float>(id % 7 - j);
      update->mutable_gradients()->append(reinterpret_cast<const char*>(&grad), sizeof(grad));
    }
  }
  *lookup.mutable_lookups(0)->mutable_ids() = update->ids();
  EXPECT_TRUE(client.PushSparse(push).ok());
  auto rows = client.Lookup(lookup);
  EXPECT_TRUE(rows.ok()) << rows.status();
  if (!rows.ok()) return {};
  const std::string& bytes = rows->values(0).data();
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

TEST(PsCheckpointerProcessTest, APsKilledMidDeltaLeavesThePreviousIncrementalCheckpointValid) {
  Ps ps = StartPs(0, 4 * kMiB, 4);  // dense variables go whole in a delta too: ~1 s a save
  TempDir dir;
  PsCheckpointer checkpointer(dir.path(), 3, Clients({&ps}), /*full_every=*/5);
  TrainRows(*ps.client, 1000, 1.0f);
  ASSERT_TRUE(checkpointer.Save(1, {{"step", 1}}).ok());
  const std::vector<float> at_second = TrainRows(*ps.client, 100, 2.0f);
  auto second = checkpointer.Save(2, {{"step", 2}});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->deltas, 1);
  auto dense_at_second = ps.client->Pull({"v0"});
  ASSERT_TRUE(dense_at_second.ok());

  TrainRows(*ps.client, 10, 3.0f);
  // Dense variables pushed since the base are written whole in the next delta (~1 s at this PS's
  // throttled speed), so the kill below lands mid-write; unchanged ones would be skipped and the
  // save done before the kill.
  const std::vector<float> ones(kFloatsPerVariable, 1.0f);
  std::vector<v1::Tensor> deltas;
  for (int i = 0; i < 4; ++i) deltas.push_back(FloatTensor(ones, {kFloatsPerVariable}));
  ASSERT_TRUE(ps.client->Push({"v0", "v1", "v2", "v3"}, std::move(deltas)).ok());
  std::optional<absl::StatusOr<SavedCheckpoint>> third;
  std::thread save([&] { third = checkpointer.Save(3, {{"step", 3}}); });
  const bool writing = WaitFor([&] { return !ShardsBeingWritten(StepDir(dir.path(), 3)).empty(); },
                               absl::Seconds(30));
  if (writing) ps.process.KillAndWait(SIGKILL);
  save.join();
  ASSERT_TRUE(writing);
  ASSERT_FALSE(third->ok());
  EXPECT_FALSE(std::filesystem::exists(StepDir(dir.path(), 3) + "/MANIFEST.json"));

  // The restarted PS gets step 2 back: the full save of step 1 and the delta of step 2.
  Ps restarted = StartPs(0, 0, 0);
  auto restored = PsCheckpointer(dir.path(), 3, Clients({&restarted}), 5).RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_TRUE(restored->has_value());
  EXPECT_EQ((*restored)->step, 2);
  auto dense = restarted.client->Pull({"v0"});
  ASSERT_TRUE(dense.ok()) << dense.status();
  EXPECT_EQ((*dense)[0].data(), (*dense_at_second)[0].data());
  v1::LookupRequest lookup;
  lookup.add_lookups()->set_table("emb");
  for (int64_t id = 0; id < 100; ++id) {
    lookup.mutable_lookups(0)->mutable_ids()->append(reinterpret_cast<const char*>(&id), 8);
  }
  auto rows = restarted.client->Lookup(lookup);
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::vector<float> values(at_second.size());
  ASSERT_EQ(rows->values(0).data().size(), values.size() * sizeof(float));
  std::memcpy(values.data(), rows->values(0).data().data(), rows->values(0).data().size());
  EXPECT_EQ(values, at_second);
}

}  // namespace
}  // namespace tj::sdk
