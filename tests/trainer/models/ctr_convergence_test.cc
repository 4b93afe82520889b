// The sparse CTR models learn the synthetic generator's hidden model with plain SGD, in-process.
// A local table stands in for the parameter servers: gather the batch's rows, compute, scatter
// the summed per-id gradient back.
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "trainer/data/split.h"
#include "trainer/data/synthetic_ctr.h"
#include "trainer/models/auc.h"
#include "trainer/models/batch_ids.h"
#include "trainer/models/ctr_model.h"

namespace tj::train {
namespace {

class LocalTable {
 public:
  LocalTable(int64_t num_ids, int32_t row_dim, float init_scale)
      : row_dim_(row_dim), data_(static_cast<size_t>(num_ids * row_dim), 0.0f) {
    // Linear weights start at 0; FM factors need small random values to get a gradient at all.
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> u(-init_scale, init_scale);
    for (size_t i = 0; i < data_.size(); ++i) {
      if (i % row_dim_ != 0) data_[i] = u(rng);
    }
  }

  void Gather(const std::vector<int64_t>& ids, std::vector<float>& rows) const {
    rows.resize(ids.size() * row_dim_);
    for (size_t s = 0; s < ids.size(); ++s) {
      std::copy_n(&data_[ids[s] * row_dim_], row_dim_, &rows[s * row_dim_]);
    }
  }

  void ApplySgd(const std::vector<int64_t>& ids, const std::vector<float>& grad, float lr) {
    for (size_t s = 0; s < ids.size(); ++s) {
      for (int32_t j = 0; j < row_dim_; ++j)
        data_[ids[s] * row_dim_ + j] -= lr * grad[s * row_dim_ + j];
    }
  }

 private:
  int32_t row_dim_;
  std::vector<float> data_;
};

struct Result {
  double auc = 0;
  double bayes_auc = 0;  // the hidden model's own AUC on the same examples: the ceiling
  double seconds = 0;
};

Result Train(CtrModelType type, int32_t k, float lr) {
  const auto start = std::chrono::steady_clock::now();
  const SyntheticCtrOptions options{.seed = 11,
                                    .num_examples = 120'000,
                                    .num_fields = 8,
                                    .vocab_per_field = 1000,
                                    .id_space = 1 << 18,
                                    .weight_stddev = 1.0,
                                    .bias = -1.0};
  auto generator =
      std::shared_ptr<const SyntheticCtrDataset>(*SyntheticCtrDataset::Create(options));
  auto split = *SplitTrainTest(generator, 20);
  const CtrModel model = *CtrModel::Create(type, k);
  LocalTable table(generator->dim(), model.row_dim(), 0.05f);
  float bias = 0;

  constexpr int64_t kBatch = 256;
  Batch batch;
  std::vector<float> rows, grad;
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int64_t begin = 0; begin < split.train->num_examples(); begin += kBatch) {
      const int64_t end = std::min(begin + kBatch, split.train->num_examples());
      EXPECT_TRUE(split.train->Read(begin, end, batch).ok());
      const BatchIds ids = *DedupIds(batch);
      table.Gather(ids.unique, rows);
      grad.resize(rows.size());
      CtrHeadParams grad_head;
      auto loss = model.LossAndGradient(batch, ids, rows, {.bias = bias}, grad, grad_head);
      EXPECT_TRUE(loss.ok()) << loss.status();
      table.ApplySgd(ids.unique, grad, lr);
      bias -= lr * grad_head.bias;
    }
  }

  const Batch test = *split.test->Read(0, split.test->num_examples());
  const BatchIds ids = *DedupIds(test);
  table.Gather(ids.unique, rows);
  std::vector<float> p(test.num_rows), truth(test.num_rows);
  EXPECT_TRUE(model.Predict(test, ids, rows, {.bias = bias}, p).ok());
  for (int64_t r = 0; r < test.num_rows; ++r) {
    truth[r] = static_cast<float>(generator->TrueProbability(split.test->SourceIndex(r)));
  }
  Result result;
  result.auc = *Auc(p, test.labels);
  result.bayes_auc = *Auc(truth, test.labels);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

TEST(CtrConvergenceTest, LogisticRegressionLearnsTheHiddenModel) {
  const Result result = Train(CtrModelType::kLogisticRegression, 0, 20.0f);
  std::printf("sparse LR: test AUC %.4f (hidden model %.4f), %.2f s\n", result.auc,
              result.bayes_auc, result.seconds);
  EXPECT_GT(result.auc, 0.7);
}

TEST(CtrConvergenceTest, FactorizationMachineLearnsTheHiddenModel) {
  const Result result = Train(CtrModelType::kFactorizationMachine, 4, 20.0f);
  std::printf("FM k=4: test AUC %.4f (hidden model %.4f), %.2f s\n", result.auc, result.bayes_auc,
              result.seconds);
  EXPECT_GT(result.auc, 0.7);
}

}  // namespace
}  // namespace tj::train
