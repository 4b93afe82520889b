// tj-train's softmax kernel with the streamed step (--streamed-step, the default: W's gradient
// written a few rows at a time and pushed slice by slice, ShardedPsClient::StreamPush) against the
// unstreamed one (the whole gradient, then Push): two sets of in-process PS tasks, the weights
// partitioned into several slices, the same batches. And a kernel re-created after a coordinator
// restart takes its values and gradient from the buffers the one before left (spare_buffers.h).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/ps/sharded_ps_client.h"
#include "coordinator/ps/spare_buffers.h"
#include "tests/trainer/sdk/in_process_ps_cluster.h"
#include "trainer/data/batch.h"
#include "trainer/train/model_kernel.h"

namespace tj::train {
namespace {

constexpr int64_t kFeatures = 40;
constexpr int32_t kClasses = 7000;  // W: 40 x 7000 float32 = 1.07 MiB; each row 28,000 bytes
constexpr int64_t kSliceBytes = 128 << 10;  // ~9 slices of W over 2 tasks

// Rows with a few non-zero features each (some shared between rows, some negative), labels
// spread over the classes; `seed` varies the batch from step to step.
Batch DenseBatch(int64_t rows, int seed) {
  Batch batch;
  batch.Reset(BatchKind::kDense, kFeatures);
  batch.num_rows = rows;
  batch.dense.assign(static_cast<size_t>(rows * kFeatures), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t f = 0; f < 4; ++f) {
      const int64_t j = (r * 7 + f * 11 + seed * 3) % kFeatures;
      batch.dense[static_cast<size_t>(r * kFeatures + j)] =
          0.37f * static_cast<float>(f + 1) - 0.21f * static_cast<float>(seed % 3);
    }
    batch.labels.push_back(static_cast<int32_t>((r * 977 + seed * 131) % kClasses));
  }
  return batch;
}

struct Trainer {
  testing::InProcessPsCluster cluster;
  std::unique_ptr<ModelKernel> kernel;
  std::unique_ptr<ShardedPsClient> ps;
};

TrainConfig Config(bool streamed) {
  TrainConfig config;
  config.model = "softmax";
  config.optimizer = "adagrad";  // state beyond the values: its accumulator sees every gradient
  config.learning_rate = 0.5;
  config.streamed_step = streamed;
  return config;
}

std::unique_ptr<Trainer> StartTrainer(bool streamed) {
  auto trainer = std::make_unique<Trainer>();
  trainer->cluster.StartServers(2);
  if (trainer->cluster.clients.size() != 2) return nullptr;
  auto kernel = MakeModelKernel(Config(streamed), kFeatures, kClasses);
  EXPECT_TRUE(kernel.ok()) << kernel.status();
  if (!kernel.ok()) return nullptr;
  trainer->kernel = *std::move(kernel);
  auto ps = ShardedPsClient::Create(
      trainer->cluster.clients, trainer->kernel->Variables(), trainer->kernel->Tables(),
      {.placement = {.partitioner = PartitionerConfig::MinSize(kSliceBytes),
                     .max_slice_bytes = kSliceBytes},
       .max_rpc_bytes = kSliceBytes,
       .max_bytes_in_flight = 2 * kSliceBytes});
  EXPECT_TRUE(ps.ok()) << ps.status();
  if (!ps.ok()) return nullptr;
  trainer->ps = *std::move(ps);
  EXPECT_TRUE(trainer->ps->CreateVariables().ok());
  return trainer;
}

// The bytes of every variable on the PS tasks.
std::vector<std::string> PsState(const ShardedPsClient& ps) {
  auto pulled = ps.Pull({"softmax/w", "softmax/b"});
  EXPECT_TRUE(pulled.ok()) << pulled.status();
  std::vector<std::string> state;
  if (pulled.ok()) {
    for (const v1::Tensor& t : *pulled) state.push_back(t.data());
  }
  return state;
}

TEST(StreamedSoftmaxKernelTest, EveryStepEqualsTheUnstreamedOneBitForBit) {
  auto reference = StartTrainer(/*streamed=*/false);
  auto streamed = StartTrainer(/*streamed=*/true);
  ASSERT_NE(reference, nullptr);
  ASSERT_NE(streamed, nullptr);
  ASSERT_GT(streamed->ps->placement().Find("softmax/w")->slices.size(), 4u);
  std::vector<std::string> before = PsState(*reference->ps);
  for (int step = 0; step < 5; ++step) {
    const Batch batch = DenseBatch(6 + step, step);
    auto a = reference->kernel->TrainStep(batch, *reference->ps);
    auto b = streamed->kernel->TrainStep(batch, *streamed->ps);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(std::memcmp(&a->loss, &b->loss, sizeof(double)), 0)
        << "loss, step " << step << ": " << a->loss << " vs " << b->loss;
    EXPECT_EQ(a->examples, b->examples);
    // Values and Adagrad's accumulator follow from every element of both gradients: equal PS
    // values (bit for bit) and slots after each step mean equal gradients.
    const std::vector<std::string> state = PsState(*reference->ps);
    ASSERT_EQ(state.size(), 2u);
    EXPECT_TRUE(PsState(*streamed->ps) == state) << "PS values differ after step " << step;
    EXPECT_TRUE(streamed->cluster.States() == reference->cluster.States())
        << "PS state (values, accumulators, steps) differs after step " << step;
    EXPECT_NE(state, before) << "step " << step << " changed nothing";
    before = state;
  }
}

TEST(StreamedSoftmaxKernelTest, AKernelRecreatedAfterARestartTakesItsBuffersFromTheSpares) {
  constexpr size_t kWeightBytes = size_t{kFeatures} * kClasses * sizeof(float);
  for (const bool streamed : {false, true}) {
    SCOPED_TRACE(streamed ? "streamed" : "unstreamed");
    auto trainer = StartTrainer(streamed);
    ASSERT_NE(trainer, nullptr);
    const Batch batch = DenseBatch(8, 1);
    ASSERT_TRUE(trainer->kernel->TrainStep(batch, *trainer->ps).ok());
    // The coordinator restarts: the worker drops the trainer (its kernel) and creates a new one.
    const size_t before = SpareBufferBytes();
    trainer->kernel.reset();
    const size_t given = SpareBufferBytes() - before;
    EXPECT_GE(given, 2 * kWeightBytes) << "W's values and gradient are left as spares";
    auto kernel = MakeModelKernel(Config(streamed), kFeatures, kClasses);
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    ASSERT_TRUE((*kernel)->TrainStep(batch, *trainer->ps).ok());
    // Its first step received into them instead of fresh memory.
    EXPECT_LE(SpareBufferBytes(), before + given - 2 * kWeightBytes);
  }
}

}  // namespace
}  // namespace tj::train
