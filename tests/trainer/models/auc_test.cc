#include "trainer/models/auc.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace tj::train {
namespace {

TEST(AucTest, PerfectReversedAndConstant) {
  const std::vector<int32_t> labels = {0, 0, 1, 1};
  EXPECT_DOUBLE_EQ(*Auc(std::vector<float>{0.1f, 0.2f, 0.8f, 0.9f}, labels), 1.0);
  EXPECT_DOUBLE_EQ(*Auc(std::vector<float>{0.9f, 0.8f, 0.2f, 0.1f}, labels), 0.0);
  EXPECT_DOUBLE_EQ(*Auc(std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f}, labels), 0.5);
}

TEST(AucTest, CountsPairsWithTiesAsHalf) {
  // Positives 0.4, 0.7; negatives 0.4, 0.2, 0.9. Pairs won: 0.4>0.2, 0.4=0.4 (half), 0.7>0.4,
  // 0.7>0.2 -> 3.5 of 6.
  const std::vector<float> scores = {0.4f, 0.7f, 0.4f, 0.2f, 0.9f};
  const std::vector<int32_t> labels = {1, 1, 0, 0, 0};
  EXPECT_DOUBLE_EQ(*Auc(scores, labels), 3.5 / 6);
}

TEST(AucTest, Errors) {
  EXPECT_EQ(Auc(std::vector<float>{0.1f}, std::vector<int32_t>{1}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Auc(std::vector<float>{0.1f, 0.2f}, std::vector<int32_t>{1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Auc(std::vector<float>{0.1f, 0.2f}, std::vector<int32_t>{1, 2}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Auc(std::vector<float>{NAN, 0.2f}, std::vector<int32_t>{1, 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tj::train
