// Softmax regression on the digits data set (python3-sklearn's digits.csv.gz) with plain SGD,
// in-process, the way tj-train's workers will run it: each step reads one example range.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tests/trainer/test_files.h"
#include "trainer/data/csv_reader.h"
#include "trainer/data/split.h"
#include "trainer/models/softmax_regression.h"

namespace tj::train {
namespace {

TEST(DigitsConvergenceTest, SgdReachesHeldOutAccuracy) {
  const std::string path = testing::DigitsCsvPath();
  if (path.empty()) GTEST_SKIP() << "digits.csv.gz absent: apt-get install python3-sklearn";
  const auto start = std::chrono::steady_clock::now();

  auto data = ReadCsv(path);
  ASSERT_TRUE(data.ok()) << data.status();
  auto split = SplitTrainTest(std::shared_ptr<const Dataset>(std::move(*data)), 20);
  ASSERT_TRUE(split.ok()) << split.status();
  const Dataset& train = *split->train;
  const Dataset& test = *split->test;

  const SoftmaxRegression model(train.dim(), train.num_classes());
  std::vector<float> w(model.weights_size(), 0.0f), b(model.num_classes(), 0.0f);
  std::vector<float> dw(w.size()), db(b.size());

  // Pixels are 0..16; a step of 1e-3 keeps x.dW well below 1 per step.
  constexpr int64_t kBatch = 32;
  constexpr int kEpochs = 20;
  constexpr float kLearningRate = 1e-3f;
  std::vector<int64_t> ranges((train.num_examples() + kBatch - 1) / kBatch);
  std::iota(ranges.begin(), ranges.end(), 0);
  std::mt19937 rng(42);
  Batch batch;
  double loss = 0;
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    // Ranges in a new order every epoch, as workers would take them from the queue.
    std::shuffle(ranges.begin(), ranges.end(), rng);
    for (const int64_t range : ranges) {
      const int64_t begin = range * kBatch;
      ASSERT_TRUE(train.Read(begin, std::min(begin + kBatch, train.num_examples()), batch).ok());
      auto step_loss = model.LossAndGradient(batch, w, b, dw, db);
      ASSERT_TRUE(step_loss.ok()) << step_loss.status();
      loss = *step_loss;
      for (size_t i = 0; i < w.size(); ++i) w[i] -= kLearningRate * dw[i];
      for (size_t c = 0; c < b.size(); ++c) b[c] -= kLearningRate * db[c];
    }
  }

  auto held_out = test.Read(0, test.num_examples());
  ASSERT_TRUE(held_out.ok());
  auto metrics = model.Evaluate(*held_out, w, b);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "digits: %d epochs, last train loss %.4f, held-out loss %.4f, accuracy %.4f on %lld "
      "examples, %.2f s\n",
      kEpochs, loss, metrics->loss, metrics->accuracy, static_cast<long long>(test.num_examples()),
      seconds);
  RecordProperty("held_out_accuracy", std::to_string(metrics->accuracy));
  RecordProperty("seconds", std::to_string(seconds));
  EXPECT_GE(metrics->accuracy, 0.92);
  EXPECT_LT(seconds, 10);
}

}  // namespace
}  // namespace tj::train
