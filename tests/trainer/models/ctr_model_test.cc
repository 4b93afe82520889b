#include "trainer/models/ctr_model.h"

#include <cmath>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainer/models/batch_ids.h"

namespace tj::train {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Rows given as lists of (id, value); repeated ids within and across rows on purpose.
Batch SparseBatch(const std::vector<std::vector<std::pair<int64_t, float>>>& rows,
                  std::vector<int32_t> labels) {
  Batch batch;
  batch.Reset(BatchKind::kSparse, 100);
  for (const auto& row : rows) {
    for (const auto& [id, value] : row) {
      batch.ids.push_back(id);
      batch.values.push_back(value);
    }
    batch.row_offsets.push_back(static_cast<int64_t>(batch.ids.size()));
  }
  batch.num_rows = static_cast<int64_t>(rows.size());
  batch.labels = std::move(labels);
  return batch;
}

Batch Example() {
  return SparseBatch({{{7, 1}, {3, 0.5}, {9, 1}},
                      {{3, 1}, {42, 2}},
                      {{7, 1}, {9, -1.5}, {3, 1}, {11, 1}},
                      {{42, 1}}},
                     {1, 0, 1, 0});
}

std::vector<float> RandomVector(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

TEST(BatchIdsTest, DeduplicatesInFirstSeenOrder) {
  const Batch batch = Example();
  auto ids = DedupIds(batch);
  ASSERT_TRUE(ids.ok());
  EXPECT_THAT(ids->unique, ElementsAre(7, 3, 9, 42, 11));
  EXPECT_THAT(ids->slots, ElementsAre(0, 1, 2, 1, 3, 0, 2, 1, 4, 3));
  Batch dense;
  dense.Reset(BatchKind::kDense, 1);
  EXPECT_FALSE(DedupIds(dense).ok());
}

TEST(CtrModelTest, LogLossAndSigmoidAreStable) {
  EXPECT_NEAR(LogLoss(0, 1), std::log(2.0), 1e-12);
  EXPECT_NEAR(LogLoss(800, 0), 800, 1e-9);
  EXPECT_NEAR(LogLoss(-800, 1), 800, 1e-9);
  EXPECT_NEAR(LogLoss(800, 1), 0, 1e-12);
  EXPECT_EQ(Sigmoid(-800), 0.0);
  EXPECT_EQ(Sigmoid(800), 1.0);
}

TEST(CtrModelTest, FactorizationMachineMatchesPairwiseSum) {
  const int k = 3;
  auto model = *CtrModel::Create(CtrModelType::kFactorizationMachine, k);
  const Batch batch = Example();
  const BatchIds ids = *DedupIds(batch);
  const std::vector<float> rows = RandomVector(ids.unique.size() * model.row_dim(), 5, 0.7f);
  const float bias = 0.3f;
  std::vector<float> logits(4);
  ASSERT_TRUE(model.Logits(batch, ids, rows, {.bias = bias}, logits).ok());
  for (int64_t r = 0; r < batch.num_rows; ++r) {
    // The definition: w0 + sum_i w_i x_i + sum_{i<j} <v_i, v_j> x_i x_j, in O(n^2 k).
    double z = bias;
    for (int64_t a = batch.row_offsets[r]; a < batch.row_offsets[r + 1]; ++a) {
      const float* va = &rows[ids.slots[a] * model.row_dim()];
      z += va[0] * batch.values[a];
      for (int64_t c = a + 1; c < batch.row_offsets[r + 1]; ++c) {
        const float* vc = &rows[ids.slots[c] * model.row_dim()];
        for (int f = 1; f <= k; ++f) z += va[f] * vc[f] * batch.values[a] * batch.values[c];
      }
    }
    EXPECT_NEAR(logits[r], z, 1e-5) << "row " << r;
  }
}

class CtrGradientTest : public ::testing::TestWithParam<int> {};

TEST_P(CtrGradientTest, MatchesFiniteDifferences) {
  const int k = GetParam();
  auto model = *CtrModel::Create(
      k == 0 ? CtrModelType::kLogisticRegression : CtrModelType::kFactorizationMachine, k);
  const Batch batch = Example();
  const BatchIds ids = *DedupIds(batch);
  std::vector<float> rows = RandomVector(ids.unique.size() * model.row_dim(), 11, 0.5f);
  float bias = -0.2f;
  std::vector<float> grad(rows.size());
  CtrHeadParams grad_head;
  auto loss = model.LossAndGradient(batch, ids, rows, {.bias = bias}, grad, grad_head);
  ASSERT_TRUE(loss.ok()) << loss.status();

  std::vector<float> unused(rows.size());
  CtrHeadParams unused_head;
  const auto loss_now = [&] {
    return *model.LossAndGradient(batch, ids, rows, {.bias = bias}, unused, unused_head);
  };
  const float eps = 1e-2f;
  for (size_t i = 0; i < rows.size(); ++i) {
    const float saved = rows[i];
    rows[i] = saved + eps;
    const double up = loss_now();
    rows[i] = saved - eps;
    const double down = loss_now();
    rows[i] = saved;
    const double numeric = (up - down) / (2 * eps);
    EXPECT_NEAR(grad[i], numeric, 1e-3 + 1e-2 * std::fabs(numeric))
        << "id " << ids.unique[i / model.row_dim()] << " element " << i % model.row_dim();
  }
  bias += eps;
  const double up = loss_now();
  bias -= 2 * eps;
  const double down = loss_now();
  EXPECT_NEAR(grad_head.bias, (up - down) / (2 * eps), 1e-3);
  EXPECT_EQ(grad_head.scale, 0) << "a bias head has no scale to learn";
}

INSTANTIATE_TEST_SUITE_P(LogisticAndFm, CtrGradientTest, ::testing::Values(0, 1, 4),
                         [](const auto& info) { return "k" + std::to_string(info.param); });

// One example, one id (w = 0.5, x = 1), b = 0.1, a = 2, clicked: s = 0.5, z = 0.1 + 2 * 0.5 = 1.1,
// p = sigmoid(1.1) = 0.7502601, dL/dz = p - 1 = -0.2497399; dL/db = -0.2497399,
// dL/da = s dL/dz = -0.1248699, dL/dw = a x dL/dz = -0.4994798, loss = log(1 + e^-1.1) = 0.2873353.
TEST(CtrModelTest, DenseHeadByHand) {
  auto model = *CtrModel::Create(CtrModelType::kLogisticRegression, 0, CtrHead::kDense);
  EXPECT_EQ(model.head(), CtrHead::kDense);
  const Batch batch = SparseBatch({{{5, 1}}}, {1});
  const BatchIds ids = *DedupIds(batch);
  const std::vector<float> rows = {0.5f};
  std::vector<float> grad(1), logits(1);
  CtrHeadParams grad_head;
  auto loss = model.LossAndGradient(batch, ids, rows, {.bias = 0.1f, .scale = 2}, grad, grad_head);
  ASSERT_TRUE(loss.ok()) << loss.status();
  EXPECT_NEAR(*loss, 0.2873353, 1e-6);
  EXPECT_NEAR(grad_head.bias, -0.2497399, 1e-6);
  EXPECT_NEAR(grad_head.scale, -0.1248699, 1e-6);
  EXPECT_NEAR(grad[0], -0.4994798, 1e-6);
  ASSERT_TRUE(model.Logits(batch, ids, rows, {.bias = 0.1f, .scale = 2}, logits).ok());
  EXPECT_NEAR(logits[0], 1.1, 1e-6);
}

TEST(CtrModelTest, DenseHeadGradientMatchesFiniteDifferences) {
  auto model = *CtrModel::Create(CtrModelType::kFactorizationMachine, 4, CtrHead::kDense);
  const Batch batch = Example();
  const BatchIds ids = *DedupIds(batch);
  std::vector<float> rows = RandomVector(ids.unique.size() * model.row_dim(), 13, 0.5f);
  CtrHeadParams head{.bias = -0.2f, .scale = -1.3f};
  std::vector<float> grad(rows.size()), unused(rows.size());
  CtrHeadParams grad_head, unused_head;
  ASSERT_TRUE(model.LossAndGradient(batch, ids, rows, head, grad, grad_head).ok());
  const auto loss_now = [&] {
    return *model.LossAndGradient(batch, ids, rows, head, unused, unused_head);
  };
  const float eps = 1e-2f;
  const auto numeric = [&](float& x) {
    const float saved = x;
    x = saved + eps;
    const double up = loss_now();
    x = saved - eps;
    const double down = loss_now();
    x = saved;
    return (up - down) / (2 * eps);
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    const double expected = numeric(rows[i]);
    EXPECT_NEAR(grad[i], expected, 1e-3 + 1e-2 * std::fabs(expected)) << "element " << i;
  }
  EXPECT_NEAR(grad_head.bias, numeric(head.bias), 1e-3);
  const double scale = numeric(head.scale);
  EXPECT_NEAR(grad_head.scale, scale, 1e-3 + 1e-2 * std::fabs(scale));
  EXPECT_GT(std::fabs(grad_head.scale), 1e-3) << "the example must exercise the scale";
}

TEST(CtrModelTest, PredictIsTheSigmoidOfTheLogit) {
  auto model = *CtrModel::Create(CtrModelType::kLogisticRegression, 0);
  const Batch batch = SparseBatch({{{1, 1}}, {{2, 1}, {1, 1}}}, {0, 1});
  const BatchIds ids = *DedupIds(batch);
  const std::vector<float> rows = {2, -3};  // id 1, id 2
  std::vector<float> p(2);
  ASSERT_TRUE(model.Predict(batch, ids, rows, {.bias = 0.5f}, p).ok());
  EXPECT_NEAR(p[0], 1 / (1 + std::exp(-2.5)), 1e-6);
  EXPECT_NEAR(p[1], 1 / (1 + std::exp(0.5)), 1e-6);
}

TEST(CtrModelTest, RejectsBadInputs) {
  EXPECT_FALSE(CtrModel::Create(CtrModelType::kLogisticRegression, 2).ok());
  EXPECT_FALSE(CtrModel::Create(CtrModelType::kFactorizationMachine, 0).ok());
  auto model = *CtrModel::Create(CtrModelType::kFactorizationMachine, 2);
  const Batch batch = Example();
  const BatchIds ids = *DedupIds(batch);
  std::vector<float> rows(ids.unique.size() * 3), grad(rows.size());
  CtrHeadParams grad_head;
  EXPECT_THAT(
      model.LossAndGradient(batch, ids, std::span<const float>(rows).first(4), {}, grad, grad_head)
          .status()
          .message(),
      HasSubstr("rows has 4 floats, expected 5 ids x 3"));
  const BatchIds other = *DedupIds(SparseBatch({{{1, 1}}}, {0}));
  EXPECT_THAT(model.LossAndGradient(batch, other, rows, {}, grad, grad_head).status().message(),
              HasSubstr("was it built from this batch?"));
  Batch three = Example();
  three.labels[0] = 3;
  EXPECT_THAT(model.LossAndGradient(three, ids, rows, {}, grad, grad_head).status().message(),
              HasSubstr("0/1 labels"));
  EXPECT_THAT(model.LossAndGradient(batch, ids, rows, {.bias = 0, .scale = 2}, grad, grad_head)
                  .status()
                  .message(),
              HasSubstr("bias head has no scale"));
}

}  // namespace
}  // namespace tj::train
