#include "coordinator/ps/tensor_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/base/values.h"

namespace tj {
namespace {

using ::testing::HasSubstr;

TEST(TensorSpecTest, PrintsDtypeAndShape) {
  EXPECT_EQ(TensorSpec::Of(FloatTensor(std::vector<float>(6), {2, 3})).ToString(), "float32[2, 3]");
  EXPECT_EQ(TensorSpec::Of(FloatTensor(std::vector<float>{1}, {})).ToString(), "float32[]");
}

TEST(TensorSpecTest, MatchesComparesDtypeAndShapeButNotData) {
  const TensorSpec spec{v1::DTYPE_FLOAT32, {2}};
  EXPECT_TRUE(spec.Matches(FloatTensor(std::vector<float>{1, 2}, {2})));
  EXPECT_FALSE(spec.Matches(FloatTensor(std::vector<float>{1, 2}, {1, 2})));
  v1::Tensor int64 = FloatTensor(std::vector<float>{1, 2}, {2});
  int64.set_dtype(v1::DTYPE_INT64);
  EXPECT_FALSE(spec.Matches(int64));
}

TEST(TensorSpecTest, WellFormedNeedsExactlyTheBytesOfTheShape) {
  v1::Tensor tensor = FloatTensor(std::vector<float>{1, 2, 3}, {3});
  EXPECT_TRUE(CheckWellFormed(tensor).ok());
  tensor.mutable_data()->pop_back();
  const absl::Status status = CheckWellFormed(tensor);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("11 bytes of data, expected 12"));
}

TEST(TensorSpecTest, WellFormedRejectsUnspecifiedDtypeNegativeAndHugeShapes) {
  v1::Tensor unspecified;
  EXPECT_EQ(CheckWellFormed(unspecified).code(), absl::StatusCode::kInvalidArgument);

  v1::Tensor negative = FloatTensor({}, {-1});
  EXPECT_THAT(std::string(CheckWellFormed(negative).message()), HasSubstr("negative"));

  // 2^62 elements of 4 bytes would overflow int64 if multiplied naively.
  v1::Tensor huge = FloatTensor({}, {int64_t{1} << 31, int64_t{1} << 31});
  EXPECT_THAT(std::string(CheckWellFormed(huge).message()), HasSubstr("too large"));
}

}  // namespace
}  // namespace tj
