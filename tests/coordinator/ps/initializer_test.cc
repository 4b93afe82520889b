#include "coordinator/ps/initializer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/coordinator/ps/ps_test_values.h"

namespace tj {
namespace {

using ::testing::Each;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using testing::NormalInit;

std::vector<float> Fill(const v1::Initializer& init, std::string_view name, uint64_t first,
                        size_t n) {
  std::vector<float> out(n);
  FillInitialValues(init, InitializerStream(init, name), first, out);
  return out;
}

v1::Initializer Kind(v1::Initializer::Kind kind) {
  v1::Initializer init;
  init.set_kind(kind);
  init.set_seed(7);
  return init;
}

TEST(InitializerTest, RandomValuesDependOnlyOnSeedNameAndIndex) {
  const v1::Initializer init = NormalInit(42);
  const std::vector<float> whole = Fill(init, "w", 0, 100);

  EXPECT_EQ(Fill(init, "w", 0, 100), whole);
  // Any slice of the stream is the same slice of the whole: shards of a split variable agree.
  EXPECT_THAT(Fill(init, "w", 30, 20), ElementsAreArray(whole.begin() + 30, whole.begin() + 50));
  EXPECT_NE(Fill(init, "v", 0, 100), whole);
  EXPECT_NE(Fill(NormalInit(43), "w", 0, 100), whole);
}

TEST(InitializerTest, NormalHasTheRequestedMoments) {
  v1::Initializer init = NormalInit(1, 2.0f);
  init.set_mean(3.0f);
  const std::vector<float> x = Fill(init, "w", 0, 200000);
  double sum = 0, sum_sq = 0;
  for (float v : x) {
    sum += v;
    sum_sq += static_cast<double>(v) * v;
  }
  const double mean = sum / static_cast<double>(x.size());
  const double stddev = std::sqrt(sum_sq / static_cast<double>(x.size()) - mean * mean);
  EXPECT_NEAR(mean, 3.0, 0.02);
  EXPECT_NEAR(stddev, 2.0, 0.02);
}

TEST(InitializerTest, TruncatedNormalStaysWithinTwoStddevs) {
  v1::Initializer init = Kind(v1::Initializer::TRUNCATED_NORMAL);
  init.set_stddev(0.5f);
  for (float v : Fill(init, "w", 0, 50000)) ASSERT_LE(std::abs(v), 1.0f);
}

TEST(InitializerTest, UniformStaysInRangeAndConstantAndZerosFill) {
  v1::Initializer uniform = Kind(v1::Initializer::RANDOM_UNIFORM);
  uniform.set_minval(-0.25f);
  uniform.set_maxval(0.75f);
  double sum = 0;
  for (float v : Fill(uniform, "w", 0, 100000)) {
    ASSERT_GE(v, -0.25f);
    ASSERT_LE(v, 0.75f);
    sum += v;
  }
  EXPECT_NEAR(sum / 100000, 0.25, 0.01);
  v1::Initializer constant = Kind(v1::Initializer::CONSTANT);
  constant.set_value(2.5f);
  EXPECT_THAT(Fill(constant, "w", 9, 5), Each(2.5f));
  EXPECT_THAT(Fill(v1::Initializer(), "w", 0, 5), Each(0.0f));
}

TEST(InitializerTest, RowStreamsDifferPerIdAndAreStable) {
  const v1::Initializer init = NormalInit(5);
  const uint64_t table = InitializerStream(init, "emb");
  std::vector<float> a(4), b(4), again(4);
  FillInitialValues(init, RowStream(table, 1), 0, a);
  FillInitialValues(init, RowStream(table, 2), 0, b);
  FillInitialValues(init, RowStream(table, 1), 0, again);
  EXPECT_NE(a, b);
  EXPECT_EQ(a, again);
}

TEST(InitializerTest, BadParametersAreRejected) {
  v1::Initializer uniform = Kind(v1::Initializer::RANDOM_UNIFORM);
  uniform.set_minval(1);
  uniform.set_maxval(0);
  v1::Initializer normal = NormalInit(1, -1.0f);
  v1::Initializer nan = Kind(v1::Initializer::CONSTANT);
  nan.set_value(NAN);
  v1::Initializer unknown;
  unknown.set_kind(static_cast<v1::Initializer::Kind>(99));
  EXPECT_THAT(std::string(ValidateInitializer(uniform).message()), HasSubstr("minval"));
  EXPECT_THAT(std::string(ValidateInitializer(normal).message()), HasSubstr("stddev"));
  EXPECT_THAT(std::string(ValidateInitializer(nan).message()), HasSubstr("non-finite"));
  EXPECT_THAT(std::string(ValidateInitializer(unknown).message()), HasSubstr("unknown"));
  EXPECT_TRUE(ValidateInitializer(NormalInit(3)).ok());
}

}  // namespace
}  // namespace tj
