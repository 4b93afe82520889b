// What a training step costs in memory beyond the model (issue [scale] item 2): a worker that
// pulls a partitioned variable and pushes its gradient every step, over two in-process PS tasks,
// reuses the same buffers on both sides. Counted, not timed: the bytes of every operator new in
// the process (tj_allocation_counter; the worker's tensors and every protobuf string are allocated
// that way) and the large blocks the PS's FloatBuffer takes from the system rather than its pool.
// A copy of the variable or of a slice per step, on either side, fails these tests.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "coordinator/ps/float_buffer.h"
#include "coordinator/ps/ps_server.h"
#include "coordinator/ps/sharded_ps_client.h"
#include "tests/coordinator/ps/ps_test_values.h"
#include "tests/support/allocation_counter.h"

namespace tj {
namespace {

using testing::ConstantInit;
using testing::InitializedVariable;
using testing::SgdOptimizer;

constexpr char kName[] = "model/w";
constexpr int64_t kRows = 4096;
constexpr int64_t kColumns = 1024;  // 16 MiB of float32 in all
constexpr int64_t kVariableBytes = kRows * kColumns * 4;
constexpr int64_t kSliceBytes = int64_t{1} << 20;  // 16 slices over 2 tasks

class StepMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int task = 0; task < 2; ++task) {
      auto server = PsServer::Start("127.0.0.1:0", task);
      ASSERT_TRUE(server.ok()) << server.status();
      addresses_.push_back((*server)->address());
      servers_.push_back(*std::move(server));
    }
    auto client = ShardedPsClient::Connect(
        addresses_,
        {InitializedVariable(kName, {kRows, kColumns}, ConstantInit(1.0f), SgdOptimizer(0.5f))}, {},
        {.placement = {.partitioner = PartitionerConfig::MinSize(kSliceBytes),
                       .max_slice_bytes = kSliceBytes},
         .max_rpc_bytes = kSliceBytes,
         .max_bytes_in_flight = 4 * kSliceBytes});
    ASSERT_TRUE(client.ok()) << client.status();
    ps_ = *std::move(client);
    ASSERT_TRUE(ps_->CreateVariables().ok());
    ASSERT_GT(ps_->placement().Find(kName)->slices.size(), 8u);
  }

  // One step as a worker runs it: pull into the reused values, write the gradient into the reused
  // buffer (a fresh one only when gRPC still holds the last), push it.
  void Step() {
    ASSERT_TRUE(ps_->PullInto({kName}, values_).ok());
    if (gradient_ == nullptr || gradient_.use_count() > 1) {
      gradient_ = std::make_shared<v1::Tensor>();
      ++fresh_gradients_;
    }
    gradient_->set_dtype(v1::DTYPE_FLOAT32);
    gradient_->clear_shape();
    gradient_->add_shape(kRows);
    gradient_->add_shape(kColumns);
    gradient_->mutable_data()->resize(static_cast<size_t>(kVariableBytes));
    auto* g = reinterpret_cast<float*>(gradient_->mutable_data()->data());
    for (int64_t i = 0; i < kRows * kColumns; ++i) g[i] = 0.001f;
    ASSERT_TRUE(ps_->Push({kName}, std::vector<std::shared_ptr<const v1::Tensor>>{gradient_}).ok());
  }

  // The same step streamed: pulled, computed and pushed slice by slice.
  void StreamedStep() {
    if (gradient_ == nullptr || gradient_.use_count() > 1) {
      gradient_ = std::make_shared<v1::Tensor>();
      ++fresh_gradients_;
    }
    values_.resize(1);
    ASSERT_TRUE(ps_->StreamStep(kName, values_[0], gradient_,
                                [](int64_t, std::span<const float>, std::span<float> g) {
                                  for (float& x : g) x = 0.001f;
                                  return absl::OkStatus();
                                })
                    .ok());
  }

  std::vector<std::unique_ptr<PsServer>> servers_;
  std::vector<std::string> addresses_;
  std::unique_ptr<ShardedPsClient> ps_;
  std::vector<v1::Tensor> values_;
  std::shared_ptr<v1::Tensor> gradient_;
  int fresh_gradients_ = 0;
};

TEST_F(StepMemoryTest, AStepAllocatesFarLessThanOneSliceOnTheHeapOnceWarm) {
  Step();
  Step();
  constexpr int kSteps = 4;
  tj::testing::ResetLargestAllocation();
  for (int i = 0; i < kSteps; ++i) Step();
  // Pulled values land in the buffer of the last step and gradients leave from theirs; what is
  // left is framing and gRPC's call objects (~230 KiB for a step's 32 RPCs). A copy of one 1 MiB
  // slice per step (into a protobuf string, a staging vector) is already over these bounds.
  EXPECT_LT(tj::testing::TotalAllocatedSinceReset() / kSteps, static_cast<size_t>(kSliceBytes));
  EXPECT_LT(tj::testing::LargestAllocationSinceReset(), static_cast<size_t>(kSliceBytes / 4));
  EXPECT_EQ(fresh_gradients_, 1);
}

TEST_F(StepMemoryTest, AStreamedStepAllocatesFarLessThanOneSliceOnTheHeapOnceWarm) {
  StreamedStep();
  StreamedStep();
  const uint64_t blocks = FloatBuffer::LargeBlocksFromSystem();
  constexpr int kSteps = 4;
  tj::testing::ResetLargestAllocation();
  for (int i = 0; i < kSteps; ++i) StreamedStep();
  // Slices are received into the last step's values and pushed from its gradient, as above.
  EXPECT_LT(tj::testing::TotalAllocatedSinceReset() / kSteps, static_cast<size_t>(kSliceBytes));
  EXPECT_LT(tj::testing::LargestAllocationSinceReset(), static_cast<size_t>(kSliceBytes / 4));
  EXPECT_EQ(fresh_gradients_, 1);
  EXPECT_EQ(gradient_.use_count(), 1);
  // And the PS updated into recycled blocks (a pull's pin still in gRPC's send path may cost one
  // more pooled block now and then, as in ThePsUpdatesIntoRecycledBlocksStepAfterStep; a block per
  // update would be a slice count's worth every step): 6 SGD steps of 0.5 * 0.001 from 1.
  EXPECT_LT(FloatBuffer::LargeBlocksFromSystem() - blocks,
            ps_->placement().Find(kName)->slices.size());
  ASSERT_TRUE(ps_->PullInto({kName}, values_).ok());
  const auto* w = reinterpret_cast<const float*>(values_[0].data().data());
  EXPECT_NEAR(w[0], 1.0f - 6 * 0.0005f, 1e-5f);
  EXPECT_NEAR(w[kRows * kColumns - 1], 1.0f - 6 * 0.0005f, 1e-5f);
}

TEST_F(StepMemoryTest, AnAcceptedPushLeavesTheCallerTheOnlyReferenceToItsGradient) {
  for (int i = 0; i < 20; ++i) {
    Step();
    ASSERT_EQ(gradient_.use_count(), 1) << "after push " << i;
  }
  EXPECT_EQ(fresh_gradients_, 1);
}

TEST_F(StepMemoryTest, ThePsUpdatesIntoRecycledBlocksStepAfterStep) {
  // The first push of each slice takes one block beyond the values (SGD updates out of place);
  // from then on an update takes the block the previous one released. A pull's response can still
  // hold its block in gRPC's send path when the next push arrives (the client has all the bytes
  // before the server's write completes), and that update then takes one more block, which the
  // pool keeps: so the count may grow by a few blocks once, never by a slice's worth each step.
  // Taking a new block for every update would add 16 blocks a step, 160 over these 10 steps.
  Step();
  Step();
  const uint64_t blocks = FloatBuffer::LargeBlocksFromSystem();
  const size_t slices = ps_->placement().Find(kName)->slices.size();
  constexpr int kSteps = 10;
  for (int i = 0; i < kSteps - 5; ++i) Step();
  const uint64_t after_five = FloatBuffer::LargeBlocksFromSystem();
  for (int i = 0; i < 5; ++i) Step();
  EXPECT_LT(FloatBuffer::LargeBlocksFromSystem() - blocks, slices);
  // However the pool was topped up in the first steps, it does not keep growing.
  EXPECT_LE(FloatBuffer::LargeBlocksFromSystem() - after_five, slices / 4);
  // And the values are those of 12 SGD steps of 0.5 * 0.001 from 1.
  ASSERT_TRUE(ps_->PullInto({kName}, values_).ok());
  const auto* w = reinterpret_cast<const float*>(values_[0].data().data());
  EXPECT_NEAR(w[0], 1.0f - 12 * 0.0005f, 1e-5f);
  EXPECT_NEAR(w[kRows * kColumns - 1], 1.0f - 12 * 0.0005f, 1e-5f);
}

}  // namespace
}  // namespace tj
