// The update rules against values computed by hand (in double, with the formulas quoted), two or
// three steps each, for dense variables and sparse rows, including their slots.
#include "coordinator/ps/optimizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "coordinator/base/values.h"
#include "coordinator/ps/variable_store.h"
#include "tests/coordinator/ps/ps_state_view.h"
#include "tests/coordinator/ps/ps_test_values.h"

namespace tj {
namespace {

using testing::AdagradOptimizer;
using testing::AdamOptimizer;
using testing::ConstantInit;
using testing::CreateRequest;
using testing::CreateTablesRequest;
using ::testing::ElementsAre;
using testing::FloatVariable;
using ::testing::HasSubstr;
using testing::LookupRequest;
using ::testing::Pointwise;
using testing::SgdOptimizer;
using testing::SparsePush;
using testing::Table;
using testing::ViewOf;

constexpr double kTolerance = 1e-6;

// A store with one variable "w" of `initial` values under `optimizer`, pushed each of `grads`.
testing::DenseStateView RunDense(const v1::Optimizer& optimizer, const std::vector<float>& initial,
                                 const std::vector<std::vector<float>>& grads) {
  VariableStore store;
  v1::VariableSpec spec = FloatVariable("w", initial, {static_cast<int64_t>(initial.size())});
  *spec.mutable_optimizer() = optimizer;
  EXPECT_TRUE(store.Create(CreateRequest({spec})).ok());
  for (const auto& g : grads) {
    const absl::Status status =
        store.Push(testing::PushRequest("w", FloatTensor(g, {static_cast<int64_t>(g.size())})));
    EXPECT_TRUE(status.ok()) << status;
  }
  return ViewOf(store).variables["w"];
}

// Relative to the expected value's magnitude once above 1: a float holds ~7 significant digits.
MATCHER_P(FloatsNear, tolerance, "") {
  const double expected = std::get<1>(arg);
  return std::abs(static_cast<double>(std::get<0>(arg)) - expected) <=
         tolerance * std::max(1.0, std::abs(expected));
}

TEST(DenseOptimizerTest, AssignAddIsTheDefaultAndAddsTheDelta) {
  const auto state = RunDense(v1::Optimizer(), {1, 2}, {{0.5, -1}, {0.25, 4}});
  EXPECT_THAT(state.arrays[0], ElementsAre(1.75, 5));
  EXPECT_EQ(state.arrays.size(), 1u);  // no slots
  EXPECT_EQ(state.step, 2);
}

TEST(DenseOptimizerTest, SgdSubtractsLearningRateTimesGradient) {
  // w -= 0.1 g: [1, -2] -> [0.95, -2.1] -> [1.05, -2.125] -> [0.85, -2.125]
  const auto state = RunDense(SgdOptimizer(0.1f), {1, -2}, {{0.5, 1}, {-1, 0.25}, {2, 0}});
  EXPECT_THAT(state.arrays[0], Pointwise(FloatsNear(kTolerance), {0.85, -2.125}));
  EXPECT_EQ(state.step, 3);
}

TEST(DenseOptimizerTest, AdagradAccumulatesSquaresAndScalesBySqrt) {
  // acc starts at 0.1; acc += g^2; w -= 0.5 g / (sqrt(acc) + 1e-7).
  // Step 1, g = [1, -2]: acc [1.1, 4.1], w [0.5232687508, 2.4938647739].
  const auto one = RunDense(AdagradOptimizer(0.5f), {1, 2}, {{1, -2}});
  EXPECT_THAT(one.arrays[0], Pointwise(FloatsNear(kTolerance), {0.5232687508, 2.4938647739}));
  EXPECT_THAT(one.arrays[1], Pointwise(FloatsNear(kTolerance), {1.1, 4.1}));
  // Steps 2 and 3, g = [3, 0.5] then [-1, 1]: acc [11.1, 5.35], w [0.2013562358, 2.1578301131].
  const auto three = RunDense(AdagradOptimizer(0.5f), {1, 2}, {{1, -2}, {3, 0.5}, {-1, 1}});
  EXPECT_THAT(three.arrays[0], Pointwise(FloatsNear(kTolerance), {0.2013562358, 2.1578301131}));
  EXPECT_THAT(three.arrays[1], Pointwise(FloatsNear(kTolerance), {11.1, 5.35}));
}

TEST(DenseOptimizerTest, AdamCorrectsBiasWithThePerVariableStep) {
  // m = 0.9 m + 0.1 g; v = 0.999 v + 0.001 g^2; lr_t = 0.1 sqrt(1 - 0.999^t) / (1 - 0.9^t);
  // w -= lr_t m / (sqrt(v) + 1e-7). Step 1 moves each element by ~lr.
  const auto one = RunDense(AdamOptimizer(0.1f), {1, -1}, {{1, -2}});
  EXPECT_THAT(one.arrays[0], Pointwise(FloatsNear(kTolerance), {0.9000003162, -0.9000001581}));
  const auto three = RunDense(AdamOptimizer(0.1f), {1, -1}, {{1, -2}, {0.5, 0.5}, {-1, 2}});
  EXPECT_THAT(three.arrays[0], Pointwise(FloatsNear(kTolerance), {0.7957043323, -0.8715223519}));
  EXPECT_THAT(three.arrays[1], Pointwise(FloatsNear(kTolerance), {0.026, 0.083}));              // m
  EXPECT_THAT(three.arrays[2], Pointwise(FloatsNear(kTolerance), {0.002247751, 0.008241754}));  // v
  EXPECT_EQ(three.step, 3);
}

// A store with table "t" (dim 2, rows start at [1, -1] / [1, 2]) under `optimizer`.
class SparseOptimizerTest : public ::testing::Test {
 protected:
  void CreateTable(const v1::Optimizer& optimizer, float initial) {
    ASSERT_TRUE(
        store_.Create(CreateTablesRequest({Table("t", 2, ConstantInit(initial), optimizer)})).ok());
  }
  void Push(const std::vector<int64_t>& ids, const std::vector<float>& grads) {
    const absl::Status status = store_.PushSparse(SparsePush("t", ids, grads));
    ASSERT_TRUE(status.ok()) << status;
  }
  testing::RowStateView Row(int64_t id) { return ViewOf(store_).tables["t"][id]; }

  VariableStore store_;
};

TEST_F(SparseOptimizerTest, SgdUpdatesOnlyThePushedRows) {
  CreateTable(SgdOptimizer(0.1f), 1.0f);
  Push({3, 8}, {0.5, 1, -1, 0.25});
  Push({3}, {-1, 0.25});
  EXPECT_THAT(Row(3).data, Pointwise(FloatsNear(kTolerance), {1.05, 0.875}));
  EXPECT_THAT(Row(8).data, Pointwise(FloatsNear(kTolerance), {1.1, 0.975}));
}

TEST_F(SparseOptimizerTest, AdagradKeepsAnAccumulatorPerRow) {
  // Row 4 starts at [1, 1] (constant initializer), then as the dense case with w0 = [1, 1].
  CreateTable(AdagradOptimizer(0.5f), 1.0f);
  Push({4}, {1, -2});
  Push({4, 9}, {3, 0.5, 7, 7});
  // Row 4: acc [10.1, 4.35]; w = 1 - 0.5/sqrt(1.1) - 1.5/sqrt(10.1), 1 + 1/sqrt(4.1) -
  // 0.25/sqrt(4.35)
  EXPECT_THAT(Row(4).data,
              Pointwise(FloatsNear(kTolerance), {0.0512811840, 1.3739989543, 10.1, 4.35}));
  // Row 9 was touched once: acc 0.1 + 49, w = 1 - 3.5 / sqrt(49.1).
  EXPECT_THAT(Row(9).data,
              Pointwise(FloatsNear(kTolerance), {0.5005094316, 0.5005094316, 49.1, 49.1}));
}

TEST_F(SparseOptimizerTest, LazyAdamCountsStepsPerRow) {
  CreateTable(AdamOptimizer(0.1f), 1.0f);
  // Row 1 is pushed three times, row 2 only in the third push: its first update is a step-1 update
  // (moves by ~lr), not a step-3 one.
  Push({1}, {1, -2});
  Push({1}, {0.5, 0.5});
  Push({1, 2}, {-1, 2, -1, 2});
  const testing::RowStateView one = Row(1);
  // As the dense case from w0 = [1, 1]: w = w0 + (dense result - dense start [1, -1]).
  EXPECT_THAT(one.data, Pointwise(FloatsNear(kTolerance), {0.7957043323, 1.1284776481, 0.026, 0.083,
                                                           0.002247751, 0.008241754}));
  EXPECT_EQ(one.step, 3);
  const testing::RowStateView two = Row(2);
  // Step 1 with g = [-1, 2]: m = 0.1 g, v = 0.001 g^2, w = 1 - lr_1 m / (sqrt(v) + 1e-7).
  EXPECT_THAT(two.data, Pointwise(FloatsNear(kTolerance),
                                  {1.0999999684, 0.9000000158, -0.1, 0.2, 0.001, 0.004}));
  EXPECT_EQ(two.step, 1);
}

TEST_F(SparseOptimizerTest, RepeatedIdsInOnePushAreSummedIntoOneStep) {
  CreateTable(AdamOptimizer(0.1f), 1.0f);
  Push({5, 6, 5}, {1, -2, 9, 9, 0, 0});
  VariableStore reference;
  ASSERT_TRUE(
      reference.Create(CreateTablesRequest({Table("t", 2, ConstantInit(1), AdamOptimizer(0.1f))}))
          .ok());
  ASSERT_TRUE(reference.PushSparse(SparsePush("t", {5}, {1, -2})).ok());

  EXPECT_EQ(Row(5), ViewOf(reference).tables["t"][5]);
  EXPECT_EQ(Row(5).step, 1);
}

TEST(OptimizerConfigTest, DefaultsAreFilledInAndWrittenOut) {
  auto adam = OptimizerConfig::FromProto(AdamOptimizer(0.01f));
  ASSERT_TRUE(adam.ok()) << adam.status();
  EXPECT_EQ(adam->beta1, 0.9f);
  EXPECT_EQ(adam->beta2, 0.999f);
  EXPECT_EQ(adam->epsilon, 1e-7f);
  EXPECT_TRUE(adam->ToProto().adam().has_beta1());
  EXPECT_EQ(*OptimizerConfig::FromProto(adam->ToProto()), *adam);
  auto adagrad = OptimizerConfig::FromProto(AdagradOptimizer(0.01f));
  ASSERT_TRUE(adagrad.ok());
  EXPECT_EQ(adagrad->slot_initial_value(0), 0.1f);
  EXPECT_EQ(OptimizerConfig::FromProto(v1::Optimizer())->kind, OptimizerKind::kAssignAdd);
}

TEST(OptimizerConfigTest, BadHyperparametersAreRejected) {
  v1::Optimizer no_rate = SgdOptimizer(0);
  v1::Optimizer bad_beta = AdamOptimizer(0.1f);
  bad_beta.mutable_adam()->set_beta1(1.0f);
  v1::Optimizer negative_acc = AdagradOptimizer(0.1f);
  negative_acc.mutable_adagrad()->set_initial_accumulator_value(-1);
  v1::Optimizer nan_rate = SgdOptimizer(std::numeric_limits<float>::quiet_NaN());
  for (const auto& [proto, what] :
       std::vector<std::pair<v1::Optimizer, std::string>>{{no_rate, "learning_rate"},
                                                          {bad_beta, "beta1"},
                                                          {negative_acc, "initial_accumulator"},
                                                          {nan_rate, "learning_rate"}}) {
    auto config = OptimizerConfig::FromProto(proto);
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument) << what;
    EXPECT_THAT(std::string(config.status().message()), HasSubstr(what));
  }
}

TEST(OptimizerConfigTest, FirstNonFiniteFindsTheIndex) {
  const std::vector<float> ok = {1, 2, 3};
  const std::vector<float> bad = {1, std::numeric_limits<float>::infinity(), NAN};
  EXPECT_EQ(FirstNonFinite(reinterpret_cast<const char*>(ok.data()), ok.size()), -1);
  EXPECT_EQ(FirstNonFinite(reinterpret_cast<const char*>(bad.data()), bad.size()), 1);
}

}  // namespace
}  // namespace tj
