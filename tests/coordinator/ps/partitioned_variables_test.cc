// Partitioned variables: TensorFlow's partitioner formulas, placements of any size over any number
// of PS tasks (table-tested: slices cover the variable in order, bounded, shards whole on one task,
// deterministic whatever the order of the list), pull and push of a variable far larger than the
// channel's message limit through in-process PS servers on 127.0.0.1, the memory budget a PS
// reports, and a variable too large for the PS tasks refused before anything is created.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "coordinator/base/channel.h"
#include "coordinator/base/values.h"
#include "coordinator/ps/memory_budget.h"
#include "coordinator/ps/placement.h"
#include "coordinator/ps/ps_server.h"
#include "coordinator/ps/sharded_ps_client.h"
#include "tests/coordinator/ps/ps_test_values.h"
#include "tests/support/temp_dir.h"

namespace tj {
namespace {

using ::testing::AllOf;
using testing::ConstantInit;
using testing::Floats;
using ::testing::HasSubstr;
using testing::InitializedVariable;
using testing::SgdOptimizer;

TensorSpec Float32(std::vector<int64_t> shape) {
  TensorSpec spec;
  spec.dtype = v1::DTYPE_FLOAT32;
  spec.shape = std::move(shape);
  return spec;
}

// The examples of TensorFlow's documentation of tf.distribute.experimental.partitioners.
TEST(PartitionerTest, TensorFlowsExamples) {
  EXPECT_EQ(PartitionerConfig::MinSize(4, 2).NumShards(Float32({6, 1}), 1), 2);
  EXPECT_EQ(PartitionerConfig::MinSize(4, 10).NumShards(Float32({6, 1}), 1), 6);
  EXPECT_EQ(PartitionerConfig::MaxSize(4).NumShards(Float32({6, 1}), 1), 6);
  EXPECT_EQ(PartitionerConfig::MaxSize(4, 2).NumShards(Float32({6, 1}), 1), 2);
  EXPECT_EQ(PartitionerConfig::MaxSize(1024).NumShards(Float32({6, 1}), 1), 1);
  EXPECT_EQ(PartitionerConfig::FixedShards(2).NumShards(Float32({10, 3}), 1), 2);
  // Never more shards than rows; scalars and single rows whole.
  EXPECT_EQ(PartitionerConfig::FixedShards(20).NumShards(Float32({10, 3}), 1), 10);
  EXPECT_EQ(PartitionerConfig::FixedShards(4).NumShards(Float32({}), 1), 1);
  EXPECT_EQ(PartitionerConfig::MaxSize(4).NumShards(Float32({1, 100}), 1), 1);
  // min_size's max_shards 0 is the number of PS tasks (today's default plan).
  EXPECT_EQ(PartitionerConfig::MinSize(1 << 20).NumShards(Float32({1500, 500000}), 4), 4);
  EXPECT_EQ(PartitionerConfig::MinSize(1 << 20).NumShards(Float32({100, 100}), 4), 1);
}

TEST(PartitionerTest, ParsesTheFlagAndNamesWhatIsWrong) {
  auto min = PartitionerConfig::Parse("min_size:256KiB:3");
  ASSERT_TRUE(min.ok()) << min.status();
  EXPECT_EQ(min->kind, PartitionerKind::kMinSize);
  EXPECT_EQ(min->shard_bytes, 256 << 10);
  EXPECT_EQ(min->max_shards, 3);
  auto max = PartitionerConfig::Parse("max_size:16MiB");
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_EQ(max->shard_bytes, 16 << 20);
  EXPECT_EQ(max->max_shards, 0);
  auto fixed = PartitionerConfig::Parse("fixed:7");
  ASSERT_TRUE(fixed.ok());
  EXPECT_EQ(fixed->num_shards, 7);
  EXPECT_EQ(PartitionerConfig::Parse(fixed->ToString())->num_shards, 7);
  for (const char* bad : {"", "fixed", "fixed:0", "fixed:x", "min_size", "max_size:0",
                          "max_size:1MiB:-1", "round_robin:2", "min_size:1XB"}) {
    auto parsed = PartitionerConfig::Parse(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(parsed.status().message()), HasSubstr("partitioner '")) << bad;
  }
}

struct PlanCase {
  std::vector<int64_t> shape;
  int num_ps;
  PartitionerConfig partitioner;
  int64_t max_slice_bytes;
};

void PrintTo(const PlanCase& c, std::ostream* os) {
  *os << "[";
  for (int64_t d : c.shape) *os << d << ",";
  *os << "] over " << c.num_ps << " PS, " << c.partitioner.ToString()
      << ", slices <= " << c.max_slice_bytes;
}

class PlacementTableTest : public ::testing::TestWithParam<PlanCase> {};

TEST_P(PlacementTableTest, SlicesCoverTheVariableInOrderBoundedWithShardsWholeOnOneTask) {
  const PlanCase& c = GetParam();
  const PlacementOptions options{c.partitioner, c.max_slice_bytes};
  std::vector<v1::VariableSpec> vars = {
      InitializedVariable("v", c.shape, {}), InitializedVariable("bias", {c.shape[0]}, {}),
      InitializedVariable("other", {7, 3}, {}), InitializedVariable("scalar", {}, {})};
  auto plan = PsPlacement::Plan(vars, c.num_ps, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::reverse(vars.begin(), vars.end());
  auto reversed = PsPlacement::Plan(vars, c.num_ps, options);
  ASSERT_TRUE(reversed.ok());

  int64_t total = 0;
  for (const VariablePlacement& v : plan->variables()) {
    const VariablePlacement& w = *reversed->Find(v.name);
    ASSERT_EQ(v.slices.size(), w.slices.size()) << v.name;
    const int64_t rows = v.spec.shape.empty() ? 1 : v.spec.shape[0];
    const int64_t row_bytes = rows == 0 ? 0 : v.num_bytes / rows;
    EXPECT_EQ(v.num_shards, c.partitioner.NumShards(v.spec, c.num_ps)) << v.name;
    int64_t row = 0;
    int64_t bytes = 0;
    std::map<int, std::set<int>> tasks_of_shard;
    std::set<std::string> names;
    int last_shard = 0;
    for (size_t k = 0; k < v.slices.size(); ++k) {
      const VariableSlice& s = v.slices[k];
      // Deterministic: the same slice whatever the order of the list.
      EXPECT_EQ(s.ps_task, w.slices[k].ps_task) << v.name;
      EXPECT_EQ(s.row_begin, w.slices[k].row_begin) << v.name;
      EXPECT_EQ(s.row_begin, row) << v.name << " slice " << k;
      EXPECT_GT(s.row_end, s.row_begin) << v.name;
      EXPECT_LE(s.num_bytes, std::max(c.max_slice_bytes, row_bytes)) << v.name;
      EXPECT_EQ(s.byte_offset, bytes) << v.name;
      EXPECT_EQ(s.num_bytes,
                v.spec.shape.empty() ? v.num_bytes : (s.row_end - s.row_begin) * row_bytes);
      EXPECT_GE(s.shard, last_shard);  // shards in row order, their slices contiguous
      last_shard = s.shard;
      EXPECT_GE(s.ps_task, 0);
      EXPECT_LT(s.ps_task, c.num_ps);
      tasks_of_shard[s.shard].insert(s.ps_task);
      names.insert(s.ps_name);
      row = s.row_end;
      bytes += s.num_bytes;
    }
    EXPECT_EQ(row, rows) << v.name;
    EXPECT_EQ(bytes, v.num_bytes) << v.name;
    EXPECT_EQ(static_cast<int64_t>(tasks_of_shard.size()), v.num_shards) << v.name;
    std::set<int> tasks;
    for (const auto& [shard, t] : tasks_of_shard) {
      EXPECT_EQ(t.size(), 1u) << v.name << " shard " << shard << " is on several tasks";
      tasks.insert(*t.begin());
    }
    // Shards spread over as many tasks as they can.
    EXPECT_EQ(static_cast<int64_t>(tasks.size()), std::min<int64_t>(v.num_shards, c.num_ps))
        << v.name;
    EXPECT_EQ(names.size(), v.slices.size()) << v.name;
    if (v.slices.size() == 1) {
      EXPECT_EQ(v.slices[0].ps_name, v.name);
    }
    total += v.num_bytes;
  }
  int64_t placed = 0;
  for (int64_t b : plan->bytes_per_task()) placed += b;
  EXPECT_EQ(placed, total);
  EXPECT_EQ(plan->bytes_per_task(), reversed->bytes_per_task());
}

INSTANTIATE_TEST_SUITE_P(
    AnySizeAnyNumberOfPs, PlacementTableTest,
    ::testing::Values(
        // The default: min_size(1 MiB, num_ps) stored as 16 MiB slices.
        PlanCase{{1500, 500000}, 1, PartitionerConfig::MinSize(1 << 20), 16 << 20},
        PlanCase{{1500, 500000}, 2, PartitionerConfig::MinSize(1 << 20), 16 << 20},
        PlanCase{{1500, 500000}, 4, PartitionerConfig::MinSize(1 << 20), 16 << 20},
        PlanCase{{64, 10}, 3, PartitionerConfig::MinSize(1 << 20), 16 << 20},
        // Uneven rows: 1001 rows over 3, 7 and 5 shards, small slices.
        PlanCase{{1001, 13}, 3, PartitionerConfig::FixedShards(7), 1000},
        PlanCase{{1001, 13}, 5, PartitionerConfig::MaxSize(4000), 1300},
        PlanCase{{1001, 13}, 2, PartitionerConfig::MinSize(100, 9), 52},
        PlanCase{{97}, 4, PartitionerConfig::FixedShards(3), 40},
        PlanCase{{3, 5}, 8, PartitionerConfig::FixedShards(8), 20},
        PlanCase{{100000, 1}, 6, PartitionerConfig::MaxSize(1 << 12, 11), 1 << 10}));

TEST(PlacementTest, ALargeVariableHasSeveralSlicesPerTaskOverAllTasks) {
  // 1500 x 500,000 floats = 3 GB (the reported job) over 2 PS: 2 shards of 1.5 GB, each stored as
  // 16 MiB slices.
  auto plan = PsPlacement::Plan({InitializedVariable("softmax/w", {1500, 500000}, {})}, 2,
                                PlacementOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const VariablePlacement& w = *plan->Find("softmax/w");
  EXPECT_EQ(w.num_shards, 2);
  EXPECT_GT(w.slices.size(), 150u);
  for (const VariableSlice& s : w.slices) EXPECT_LE(s.num_bytes, kDefaultMaxSliceBytes);
  EXPECT_EQ(plan->bytes_per_task()[0], plan->bytes_per_task()[1]);
}

TEST(PlacementTest, ARowLargerThanASliceIsRefusedNamingTheVariable) {
  auto plan = PsPlacement::Plan({InitializedVariable("wide", {4, 1000}, {})}, 2,
                                {PartitionerConfig::MinSize(1), 1000});
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(plan.status().message()),
              AllOf(HasSubstr("'wide'"), HasSubstr("4000 bytes"), HasSubstr("1000")));
}

// Two PS servers in this process, reached through channels whose messages may not exceed 64 KiB:
// a 1 MiB variable crosses them only in slices.
class OverTheMessageLimitTest : public ::testing::Test {
 protected:
  static constexpr int kMessageLimit = 64 << 10;

  void SetUp() override {
    for (int task = 0; task < 2; ++task) {
      auto server = PsServer::Start("127.0.0.1:0", task);
      ASSERT_TRUE(server.ok()) << server.status();
      ps_.push_back(std::make_shared<PsClient>(
          MakeRuntimeChannel((*server)->address(), kMessageLimit), task, (*server)->address()));
      servers_.push_back(*std::move(server));
    }
  }

  absl::StatusOr<std::unique_ptr<ShardedPsClient>> Client(int64_t max_slice_bytes) {
    ShardedPsOptions options;
    options.placement = {PartitionerConfig::MinSize(1 << 10), max_slice_bytes};
    options.max_rpc_bytes = 2 * max_slice_bytes;
    options.max_bytes_in_flight = kMessageLimit;
    // 256 rows of 1 KiB: 1 MiB, 16 times the message limit.
    return ShardedPsClient::Create(
        ps_, {InitializedVariable("w", {256, 256}, ConstantInit(1), SgdOptimizer(0.5f))}, {},
        options);
  }

  std::vector<std::unique_ptr<PsServer>> servers_;
  std::vector<std::shared_ptr<PsClient>> ps_;
};

TEST_F(OverTheMessageLimitTest, PullAndPushMoveSlicesIntoAndFromOneBuffer) {
  auto client = Client(16 << 10);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_EQ((*client)->placement().Find("w")->num_shards, 2);
  ASSERT_EQ((*client)->placement().Find("w")->slices.size(), 16u);
  ASSERT_TRUE((*client)->CreateVariables().ok());

  std::vector<v1::Tensor> values;
  ASSERT_TRUE((*client)->PullInto({"w"}, values).ok());
  ASSERT_EQ(values.size(), 1u);
  EXPECT_EQ(Floats(values[0]), std::vector<float>(256 * 256, 1.0f));
  const char* buffer = values[0].data().data();

  std::vector<float> grad(256 * 256);
  for (size_t i = 0; i < grad.size(); ++i) grad[i] = static_cast<float>(i % 1000);
  auto gradient = std::make_shared<const v1::Tensor>(FloatTensor(grad, {256, 256}));
  ASSERT_TRUE((*client)->Push({"w"}, {gradient}).ok());

  ASSERT_TRUE((*client)->PullInto({"w"}, values).ok());
  EXPECT_EQ(values[0].data().data(), buffer);  // received into the same buffer
  const std::vector<float> got = Floats(values[0]);
  for (size_t i = 0; i < grad.size(); ++i) {
    ASSERT_EQ(got[i], 1.0f - 0.5f * grad[i]) << "element " << i;
  }
}

TEST_F(OverTheMessageLimitTest, SlicesAsLargeAsTheShardsWouldNotPass) {
  // The control: one slice per 512 KiB shard meets the 64 KiB limit, so the test above is real.
  auto client = Client(1 << 20);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE((*client)->CreateVariables().ok());
  auto values = (*client)->Pull({"w"});
  EXPECT_EQ(values.status().code(), absl::StatusCode::kResourceExhausted) << values.status();
}

TEST_F(OverTheMessageLimitTest, AVariableTooLargeForThePsIsRefusedBeforeAnythingIsCreated) {
  // 2^20 x 2^16 floats: 256 GiB, more than this machine has.
  auto client = ShardedPsClient::Create(ps_,
                                        {InitializedVariable("small", {4}, {}),
                                         InitializedVariable("huge/w", {1 << 20, 1 << 16}, {})},
                                        {});
  ASSERT_TRUE(client.ok()) << client.status();
  const absl::Status created = (*client)->CreateVariables();
  EXPECT_EQ(created.code(), absl::StatusCode::kResourceExhausted) << created;
  EXPECT_THAT(std::string(created.message()),
              AllOf(HasSubstr("'huge/w'"), HasSubstr("256.0 GiB"), HasSubstr("available"),
                    HasSubstr("does not fit")));
  for (const auto& ps : ps_) {
    auto health = ps->Health();
    ASSERT_TRUE(health.ok());
    EXPECT_EQ(health->num_variables(), 0);
    EXPECT_GT(health->memory_limit_bytes(), 0);
    EXPECT_GT(health->memory_available_bytes(), 0);
  }
}

void WriteFile(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

TEST(MemoryBudgetTest, ReadsTheCgroupLimitThenMeminfo) {
  testing::TempDir dir;
  const std::string root = dir.path();
  WriteFile(root + "/proc/meminfo", "MemTotal:       8000000 kB\nMemAvailable:   6000000 kB\n");
  WriteFile(root + "/proc/self/cgroup", "0::/kubepods/pod1\n");
  WriteFile(root + "/sys/fs/cgroup/kubepods/pod1/memory.max", "1073741824\n");
  WriteFile(root + "/sys/fs/cgroup/kubepods/pod1/memory.current", "104857600\n");
  MemoryBudget v2 = ReadMemoryBudget(root);
  EXPECT_EQ(v2.limit_bytes, int64_t{1} << 30);
  EXPECT_EQ(v2.available_bytes, (int64_t{1} << 30) - 104857600);
  EXPECT_THAT(v2.source, HasSubstr("memory.max"));

  // No limit on the group: the machine's memory.
  WriteFile(root + "/sys/fs/cgroup/kubepods/pod1/memory.max", "max\n");
  MemoryBudget unlimited = ReadMemoryBudget(root);
  EXPECT_EQ(unlimited.limit_bytes, int64_t{8000000} * 1024);
  EXPECT_EQ(unlimited.available_bytes, int64_t{6000000} * 1024);

  // cgroup v1, and never more than MemAvailable.
  std::filesystem::remove_all(root + "/sys/fs/cgroup/kubepods");
  WriteFile(root + "/proc/self/cgroup", "4:memory:/job\n0::/\n");
  WriteFile(root + "/sys/fs/cgroup/memory/job/memory.limit_in_bytes", "34359738368\n");
  WriteFile(root + "/sys/fs/cgroup/memory/job/memory.usage_in_bytes", "0\n");
  MemoryBudget v1 = ReadMemoryBudget(root);
  EXPECT_EQ(v1.limit_bytes, int64_t{32} << 30);
  EXPECT_EQ(v1.available_bytes, int64_t{6000000} * 1024);
}

}  // namespace
}  // namespace tj
