#include "trainer/models/softmax_regression.h"

#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tj::train {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Batch DenseBatch(int64_t dim, std::vector<float> features, std::vector<int32_t> labels) {
  Batch batch;
  batch.Reset(BatchKind::kDense, dim);
  batch.num_rows = static_cast<int64_t>(labels.size());
  batch.dense = std::move(features);
  batch.labels = std::move(labels);
  return batch;
}

std::vector<float> RandomVector(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

TEST(SoftmaxRegressionTest, ZeroWeightsGiveLogOfClassCount) {
  const SoftmaxRegression model(3, 4);
  const Batch batch = DenseBatch(3, {1, 2, 3, 0, 0, 5}, {0, 3});
  std::vector<float> w(12, 0), b(4, 0), dw(12), db(4);
  auto loss = model.LossAndGradient(batch, w, b, dw, db);
  ASSERT_TRUE(loss.ok()) << loss.status();
  EXPECT_NEAR(*loss, std::log(4.0), 1e-6);
  // Uniform softmax: db_c = 1/4 - (fraction of rows with label c).
  EXPECT_THAT(db, ElementsAre(0.25f - 0.5f, 0.25f, 0.25f, 0.25f - 0.5f));
}

TEST(SoftmaxRegressionTest, GradientMatchesFiniteDifferences) {
  const int64_t dim = 5;
  const int32_t classes = 3;
  const SoftmaxRegression model(dim, classes);
  std::vector<float> features = RandomVector(dim * 6, 1, 2.0f);
  features[3] = 0;  // a zero feature takes the skip path
  const Batch batch = DenseBatch(dim, features, {0, 2, 1, 1, 0, 2});
  std::vector<float> w = RandomVector(dim * classes, 2, 0.5f);
  std::vector<float> b = RandomVector(classes, 3, 0.5f);
  std::vector<float> dw(w.size()), db(b.size());
  ASSERT_TRUE(model.LossAndGradient(batch, w, b, dw, db).ok());

  const auto loss_at = [&](std::vector<float>& param, size_t i, float delta) {
    const float saved = param[i];
    param[i] = saved + delta;
    const double loss = model.Evaluate(batch, w, b)->loss;
    param[i] = saved;
    return loss;
  };
  const float eps = 1e-2f;
  for (size_t i = 0; i < w.size(); ++i) {
    const double numeric = (loss_at(w, i, eps) - loss_at(w, i, -eps)) / (2 * eps);
    EXPECT_NEAR(dw[i], numeric, 1e-3 + 1e-2 * std::fabs(numeric)) << "dW[" << i << "]";
  }
  for (size_t c = 0; c < b.size(); ++c) {
    const double numeric = (loss_at(b, c, eps) - loss_at(b, c, -eps)) / (2 * eps);
    EXPECT_NEAR(db[c], numeric, 1e-3 + 1e-2 * std::fabs(numeric)) << "db[" << c << "]";
  }
}

TEST(SoftmaxRegressionTest, TheGradientInTwoHalvesEqualsTheWholeOneBitForBit) {
  // Random dense features with zeros among them, random weights: the streamed step's halves
  // (logit gradients, then dw a few rows at a time) give LossAndGradient's floats exactly.
  constexpr int64_t kDim = 9;
  constexpr int32_t kClasses = 13;
  constexpr int64_t kRows = 5;
  const SoftmaxRegression model(kDim, kClasses);
  std::vector<float> x = RandomVector(kDim * kRows, 3, 2.0f);
  for (size_t i = 0; i < x.size(); i += 3) x[i] = 0;
  std::vector<int32_t> labels = {0, 12, 5, 5, 7};
  const Batch batch = DenseBatch(kDim, x, labels);
  const std::vector<float> w = RandomVector(kDim * kClasses, 4, 1.5f);
  const std::vector<float> b = RandomVector(kClasses, 5, 0.5f);
  std::vector<float> dw(kDim * kClasses), db(kClasses);
  auto loss = model.LossAndGradient(batch, w, b, dw, db);
  ASSERT_TRUE(loss.ok()) << loss.status();

  std::vector<float> dlogits(kRows * kClasses), db2(kClasses, 99.0f);
  auto loss2 = model.LossAndLogitGradient(batch, w, b, dlogits, db2);
  ASSERT_TRUE(loss2.ok()) << loss2.status();
  EXPECT_EQ(std::memcmp(&*loss, &*loss2, sizeof(double)), 0) << *loss << " vs " << *loss2;
  EXPECT_EQ(std::memcmp(db.data(), db2.data(), db.size() * sizeof(float)), 0);
  // dw in pieces of 1, 3 and 5 rows, over garbage.
  std::vector<float> dw2(kDim * kClasses, -7.0f);
  int64_t first = 0;
  for (int64_t rows : {1, 3, 5}) {
    model.WeightGradientRows(batch, dlogits, first,
                             std::span<float>(dw2).subspan(static_cast<size_t>(first * kClasses),
                                                           static_cast<size_t>(rows * kClasses)));
    first += rows;
  }
  ASSERT_EQ(first, kDim);
  EXPECT_EQ(std::memcmp(dw.data(), dw2.data(), dw.size() * sizeof(float)), 0);
  EXPECT_NE(dw, std::vector<float>(dw.size(), 0.0f));

  std::vector<float> short_dlogits(kClasses);
  EXPECT_EQ(model.LossAndLogitGradient(batch, w, b, short_dlogits, db2).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SoftmaxRegressionTest, HugeLogitsStayFinite) {
  const SoftmaxRegression model(1, 2);
  const Batch batch = DenseBatch(1, {1000}, {1});
  std::vector<float> w = {1, -1}, b = {0, 0}, dw(2), db(2);
  auto loss = model.LossAndGradient(batch, w, b, dw, db);
  ASSERT_TRUE(loss.ok());
  EXPECT_NEAR(*loss, 2000, 1e-3);  // log-softmax, not log(softmax) = log(0)
  EXPECT_NEAR(dw[0], 1000, 1e-3);
  EXPECT_NEAR(dw[1], -1000, 1e-3);
}

TEST(SoftmaxRegressionTest, PredictAndEvaluate) {
  const SoftmaxRegression model(2, 3);
  // Class c scores x . W[:, c]: class 0 likes feature 0, class 1 feature 1, class 2 neither.
  std::vector<float> w = {2, 0, 0, 0, 2, 0}, b = {0, 0, 1};
  const Batch batch = DenseBatch(2, {1, 0, 0, 1, 0, 0, 1, 0}, {0, 1, 2, 1});
  std::vector<int32_t> classes(4);
  ASSERT_TRUE(model.Predict(batch, w, b, classes).ok());
  EXPECT_THAT(classes, ElementsAre(0, 1, 2, 0));
  auto metrics = model.Evaluate(batch, w, b);
  ASSERT_TRUE(metrics.ok());
  EXPECT_DOUBLE_EQ(metrics->accuracy, 0.75);
}

TEST(SoftmaxRegressionTest, RejectsMismatchedInputs) {
  const SoftmaxRegression model(2, 3);
  std::vector<float> w(6), b(3), dw(6), db(3);
  const Batch good = DenseBatch(2, {1, 2}, {0});
  EXPECT_THAT(model.LossAndGradient(DenseBatch(3, {1, 2, 3}, {0}), w, b, dw, db).status().message(),
              HasSubstr("over 2 features got a batch of dim 3"));
  EXPECT_FALSE(model.LossAndGradient(good, std::span<const float>(w).first(5), b, dw, db).ok());
  EXPECT_FALSE(model.LossAndGradient(good, w, b, std::span<float>(dw).first(5), db).ok());
  EXPECT_THAT(model.Evaluate(DenseBatch(2, {1, 2}, {3}), w, b).status().message(),
              HasSubstr("label 3 of row 0 is outside [0, 3)"));
  EXPECT_FALSE(model.Evaluate(DenseBatch(2, {}, {}), w, b).ok());
  Batch sparse;
  sparse.Reset(BatchKind::kSparse, 2);
  EXPECT_FALSE(model.Evaluate(sparse, w, b).ok());
}

}  // namespace
}  // namespace tj::train
