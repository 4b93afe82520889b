// What tj-train's softmax kernel allocates per training step once warm (issue [scale] item 2: a
// worker holds about twice its dense variables, reused across steps): its workspace (pulled values
// and gradients) is kept between steps, so a warm step allocates nothing of the model's size.
// Counted with tj_allocation_counter (every operator new in the process: the kernel's tensors,
// protobuf strings, the in-process PS tasks' C++ objects), so this is a binary of its own.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/ps/ps_server.h"
#include "coordinator/ps/sharded_ps_client.h"
#include "tests/support/allocation_counter.h"
#include "trainer/data/batch.h"
#include "trainer/train/model_kernel.h"

namespace tj::train {
namespace {

constexpr int64_t kFeatures = 64;
constexpr int32_t kClasses = 16384;  // weights: 64 x 16384 float32 = 4 MiB, split over 2 PS
constexpr int64_t kWeightBytes = kFeatures * kClasses * 4;

Batch DenseBatch(int64_t rows) {
  Batch batch;
  batch.Reset(BatchKind::kDense, kFeatures);
  batch.num_rows = rows;
  batch.dense.assign(static_cast<size_t>(rows * kFeatures), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    batch.dense[static_cast<size_t>(r * kFeatures + r % kFeatures)] = 1.0f;
    batch.labels.push_back(static_cast<int32_t>(r * 97 % kClasses));
  }
  return batch;
}

TEST(SoftmaxKernelMemoryTest, AWarmTrainingStepAllocatesNothingOfTheModelsSize) {
  std::vector<std::unique_ptr<PsServer>> servers;
  std::vector<std::string> addresses;
  for (int task = 0; task < 2; ++task) {
    auto server = PsServer::Start("127.0.0.1:0", task);
    ASSERT_TRUE(server.ok()) << server.status();
    addresses.push_back((*server)->address());
    servers.push_back(*std::move(server));
  }
  TrainConfig config;
  config.model = "softmax";
  auto kernel = MakeModelKernel(config, kFeatures, kClasses);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  auto ps = ShardedPsClient::Connect(addresses, (*kernel)->Variables(), (*kernel)->Tables());
  ASSERT_TRUE(ps.ok()) << ps.status();
  ASSERT_TRUE((*ps)->CreateVariables().ok());
  ASSERT_GT((*ps)->placement().Find("softmax/w")->slices.size(), 1u);

  const Batch batch = DenseBatch(8);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE((*kernel)->TrainStep(batch, **ps).ok());
  constexpr int kSteps = 4;
  tj::testing::ResetLargestAllocation();
  for (int i = 0; i < kSteps; ++i) ASSERT_TRUE((*kernel)->TrainStep(batch, **ps).ok());
  // A step's own buffers (the logits of a row: 64 KiB) and RPC framing; a fresh gradient or values
  // tensor (4 MiB), or a copy of one 2 MiB slice, is over these bounds.
  EXPECT_LT(tj::testing::TotalAllocatedSinceReset() / kSteps,
            static_cast<size_t>(kWeightBytes / 4));
  EXPECT_LT(tj::testing::LargestAllocationSinceReset(), static_cast<size_t>(kWeightBytes / 8));
}

}  // namespace
}  // namespace tj::train
