// ShardedPsClient over several in-process PS tasks (and, for the kill test, real tj-ps processes):
// split variables reassembled exactly, sparse ids routed by hash with rows back in request order,
// concurrent pushes, bad input refused before any RPC, and a lost PS reported by its task.
#include "coordinator/ps/sharded_ps_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cmath>
#include <thread>
#include <vector>

#include "coordinator/base/values.h"
#include "coordinator/ps/id_hash.h"
#include "coordinator/ps/ps_error.h"
#include "coordinator/ps/ps_server.h"
#include "tests/coordinator/ps/ps_test_values.h"
#include "tjctl/local/process.h"

#ifndef TJ_PS_BINARY
#error "TJ_PS_BINARY must name the tj-ps executable"
#endif

namespace tj {
namespace {

using ::testing::AllOf;
using testing::ConstantInit;
using ::testing::ElementsAre;
using testing::Floats;
using ::testing::HasSubstr;
using testing::InitializedVariable;
using testing::NormalInit;
using ::testing::Optional;
using testing::SgdOptimizer;
using testing::Table;

constexpr int kNumPs = 3;
constexpr int64_t kMaxShardBytes = 4096;  // small, so that test-sized variables get split

std::vector<float> Iota(size_t n, float scale = 1.0f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * scale;
  return v;
}

class ShardedPsClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int task = 0; task < kNumPs; ++task) {
      auto server = PsServer::Start("127.0.0.1:0", task);
      ASSERT_TRUE(server.ok()) << server.status();
      addresses_.push_back((*server)->address());
      servers_.push_back(*std::move(server));
    }
  }

  std::unique_ptr<ShardedPsClient> Connect(std::vector<v1::VariableSpec> variables,
                                           std::vector<v1::TableSpec> tables = {}) {
    auto client = ShardedPsClient::Connect(
        addresses_, std::move(variables), std::move(tables),
        {.placement = {.partitioner = PartitionerConfig::MinSize(kMaxShardBytes)}});
    EXPECT_TRUE(client.ok()) << client.status();
    if (!client.ok()) return nullptr;
    EXPECT_TRUE((*client)->CreateVariables().ok());
    return *std::move(client);
  }

  std::vector<std::unique_ptr<PsServer>> servers_;
  std::vector<std::string> addresses_;
};

TEST_F(ShardedPsClientTest, ALargeVariableIsSplitAndReassembledExactly) {
  // 50 x 30 floats = 6000 bytes > 4096: two shards of 25 rows, on two tasks.
  const std::vector<float> initial = Iota(50 * 30, 0.5f);
  auto client = Connect({testing::FloatVariable("big", initial, {50, 30}),
                         testing::FloatVariable("small", {1, 2}, {2})});
  ASSERT_NE(client, nullptr);
  const VariablePlacement& big = *client->placement().Find("big");
  ASSERT_EQ(big.slices.size(), 2u);
  EXPECT_NE(big.slices[0].ps_task, big.slices[1].ps_task);

  auto values = client->Pull({"small", "big"});

  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_THAT(Floats((*values)[0]), ElementsAre(1, 2));
  EXPECT_EQ(Floats((*values)[1]), initial);
  EXPECT_THAT((*values)[1].shape(), ElementsAre(50, 30));
  // Each PS holds only its rows, under the shard's name.
  auto part = client->ps(big.slices[1].ps_task).Pull({"big/part_1"});
  ASSERT_TRUE(part.ok()) << part.status();
  EXPECT_THAT(part->at(0).shape(), ElementsAre(25, 30));
  EXPECT_EQ(Floats(part->at(0)), std::vector<float>(initial.begin() + 25 * 30, initial.end()));
}

TEST_F(ShardedPsClientTest, ASplitInitializedVariableEqualsTheWholeOne) {
  const v1::VariableSpec spec = InitializedVariable("emb", {151, 17}, NormalInit(3));
  auto sharded = Connect({spec});
  ASSERT_NE(sharded, nullptr);
  ASSERT_EQ(sharded->placement().Find("emb")->slices.size(), 3u);
  VariableStore whole;
  ASSERT_TRUE(whole.Create(testing::CreateRequest({spec})).ok());
  v1::PullResponse expected;
  ASSERT_TRUE(whole.Pull(testing::PullRequest({"emb"}), expected).ok());

  auto values = sharded->Pull({"emb"});

  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ((*values)[0].data(), expected.values(0).data());  // bit for bit
}

TEST_F(ShardedPsClientTest, PushSplitsGradientsAndAppliesTheOptimizerPerShard) {
  auto client = Connect({InitializedVariable("w", {40, 40}, ConstantInit(1), SgdOptimizer(0.5f))});
  ASSERT_NE(client, nullptr);
  const std::vector<float> grad = Iota(1600);

  ASSERT_TRUE(client->Push({"w"}, {FloatTensor(grad, {40, 40})}).ok());
  auto values = client->Pull({"w"});

  ASSERT_TRUE(values.ok()) << values.status();
  std::vector<float> expected(1600);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = 1.0f - 0.5f * grad[i];
  EXPECT_EQ(Floats((*values)[0]), expected);
}

TEST_F(ShardedPsClientTest, SparseIdsAreRoutedByHashAndRowsComeBackInRequestOrder) {
  auto client = Connect({}, {Table("emb", 2, {}, SgdOptimizer(1)), Table("other", 3)});
  ASSERT_NE(client, nullptr);
  // Row id ends at [id, -id] after one SGD step with gradient [-id, id] from zeros.
  std::vector<int64_t> ids;
  std::vector<float> grads;
  for (int64_t id = -50; id < 50; ++id) {
    ids.push_back(id * 1000003);
    grads.push_back(-static_cast<float>(id));
    grads.push_back(static_cast<float>(id));
  }
  const SparseUpdate update{"emb", ids, grads};
  ASSERT_TRUE(client->PushSparse({&update, 1}).ok());

  const std::vector<int64_t> query = {7 * 1000003, -50 * 1000003, 7 * 1000003, 12345, 0};
  const std::vector<int64_t> other_ids = {1, 2};
  const SparseLookup lookups[] = {{"emb", query}, {"other", other_ids}, {"emb", {}}};
  auto rows = client->Lookup(lookups);

  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_THAT((*rows)[0].shape(), ElementsAre(5, 2));
  EXPECT_THAT(Floats((*rows)[0]), ElementsAre(7, -7, -50, 50, 7, -7, 0, 0, 0, 0));
  EXPECT_THAT((*rows)[1].shape(), ElementsAre(2, 3));
  EXPECT_THAT((*rows)[2].shape(), ElementsAre(0, 2));
  // Each id was pushed only to its owner: other tasks create a fresh (zero) row when asked
  // directly.
  for (int64_t id : {int64_t{7 * 1000003}, int64_t{-50 * 1000003}}) {
    for (int task = 0; task < kNumPs; ++task) {
      auto direct = client->ps(task).Lookup(testing::LookupRequest({{"emb", {id}}}));
      ASSERT_TRUE(direct.ok()) << direct.status();
      const float first = Floats(direct->values(0))[0];
      EXPECT_EQ(first != 0.0f, task == PsTaskOfId(id, kNumPs)) << "id " << id << " task " << task;
    }
  }
}

TEST_F(ShardedPsClientTest, ConcurrentPushesFromEightThreadsEndInTheExactState) {
  auto client = Connect({InitializedVariable("w", {64, 20}, ConstantInit(0), SgdOptimizer(0.5f))},
                        {Table("emb", 4, {}, SgdOptimizer(0.5f))});
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->placement().Find("w")->split());
  constexpr int kThreads = 8;
  constexpr int kPushes = 200;
  const std::vector<int64_t> ids = {1, 2, 3, 1000, -5};
  const std::vector<float> ones(ids.size() * 4, 1.0f);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      const SparseUpdate update{"emb", ids, ones};
      for (int i = 0; i < kPushes; ++i) {
        EXPECT_TRUE(
            client->Push({"w"}, {FloatTensor(std::vector<float>(64 * 20, 1), {64, 20})}).ok());
        EXPECT_TRUE(client->PushSparse({&update, 1}).ok());
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  // -0.5 per push, 1600 pushes: exactly -800 (all partial sums are representable).
  auto values = client->Pull({"w"});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ(Floats((*values)[0]), std::vector<float>(64 * 20, -800.0f));
  const SparseLookup lookup{"emb", ids};
  auto rows = client->Lookup({&lookup, 1});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(Floats((*rows)[0]), std::vector<float>(ids.size() * 4, -800.0f));
}

TEST_F(ShardedPsClientTest, BadInputIsRefusedBeforeAnyRpc) {
  auto client = Connect({InitializedVariable("w", {40, 40}, ConstantInit(1), SgdOptimizer(1))},
                        {Table("emb", 2)});
  ASSERT_NE(client, nullptr);
  std::vector<float> nan_grad(1600, 1.0f);
  nan_grad[1599] = NAN;  // in the last shard: the first shards must not have been pushed either
  const std::vector<int64_t> ids = {1, 2};
  const std::vector<float> three = {1, 2, 3};
  const SparseUpdate short_grads{"emb", ids, three};
  const SparseLookup unknown_table{"nope", ids};

  const absl::Status nan = client->Push({"w"}, {FloatTensor(nan_grad, {40, 40})});
  const absl::Status shape = client->Push({"w"}, {FloatTensor(Iota(1600), {1600})});
  const absl::Status unknown = client->Pull({"v"}).status();
  const absl::Status mismatch = client->PushSparse({&short_grads, 1});
  const absl::Status no_table = client->Lookup({&unknown_table, 1}).status();

  EXPECT_EQ(nan.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(nan.message()), AllOf(HasSubstr("'w'"), HasSubstr("element 1599")));
  EXPECT_EQ(shape.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(shape.message()), HasSubstr("float32[40, 40]"));
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(unknown.message()), HasSubstr("'v'"));
  EXPECT_EQ(mismatch.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(mismatch.message()), AllOf(HasSubstr("'emb'"), HasSubstr("2 ids")));
  EXPECT_EQ(no_table.code(), absl::StatusCode::kNotFound);
  auto values = client->Pull({"w"});
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(Floats((*values)[0]), std::vector<float>(1600, 1.0f));
}

TEST_F(ShardedPsClientTest, CreateVariablesIsIdempotent) {
  auto client = Connect({InitializedVariable("w", {40, 40}, ConstantInit(1), SgdOptimizer(1))},
                        {Table("emb", 2)});
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Push({"w"}, {FloatTensor(std::vector<float>(1600, 1), {40, 40})}).ok());

  ASSERT_TRUE(client->CreateVariables().ok());

  auto values = client->Pull({"w"});
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(Floats((*values)[0]), std::vector<float>(1600, 0.0f));
}

TEST(ShardedPsClientKillTest, AKilledPsIsUnavailableNamingItsTask) {
  std::vector<local::ChildProcess> ps;
  std::vector<std::string> addresses;
  for (int task = 0; task < 2; ++task) {
    auto child = local::ChildProcess::StartAndWaitListening(
        TJ_PS_BINARY, {"--address", "127.0.0.1:0", "--task", std::to_string(task)});
    ASSERT_TRUE(child.ok()) << child.status();
    addresses.push_back(child->address());
    ps.push_back(*std::move(child));
  }
  auto client = ShardedPsClient::Connect(
      addresses, {InitializedVariable("a", {100}, {}), InitializedVariable("b", {50}, {})},
      {Table("emb", 4)}, {}, {.rpc_timeout = absl::Seconds(2)});
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE((*client)->CreateVariables().ok());
  const int victim = (*client)->placement().Find("b")->slices[0].ps_task;
  const int survivor = 1 - victim;
  ASSERT_EQ((*client)->placement().Find("a")->slices[0].ps_task, survivor);

  ps[static_cast<size_t>(victim)].KillAndWait(SIGKILL);
  const absl::Status pull = (*client)->Pull({"a", "b"}).status();
  std::vector<int64_t> ids;
  for (int64_t id = 0; id < 20; ++id) ids.push_back(id);
  const SparseLookup lookup{"emb", ids};
  const absl::Status sparse = (*client)->Lookup({&lookup, 1}).status();
  const auto survivor_only = (*client)->Pull({"a"});

  for (const absl::Status& status : {pull, sparse}) {
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
    EXPECT_THAT(PsTaskOf(status), Optional(victim)) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(addresses[static_cast<size_t>(victim)]));
  }
  EXPECT_TRUE(survivor_only.ok()) << survivor_only.status();
}

}  // namespace
}  // namespace tj
