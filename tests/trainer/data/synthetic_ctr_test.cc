#include "trainer/data/synthetic_ctr.h"

#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tj::train {
namespace {

SyntheticCtrOptions Small(uint64_t seed = 7) {
  return {.seed = seed,
          .num_examples = 20000,
          .num_fields = 5,
          .vocab_per_field = 200,
          .id_space = 1 << 16};
}

TEST(SyntheticCtrTest, SameRangeSameExamples) {
  auto a = SyntheticCtrDataset::Create(Small());
  auto b = SyntheticCtrDataset::Create(Small());
  ASSERT_TRUE(a.ok() && b.ok());
  auto first = (*a)->Read(1000, 1100);
  auto again = (*a)->Read(1000, 1100);
  auto other_instance = (*b)->Read(1000, 1100);
  ASSERT_TRUE(first.ok() && again.ok() && other_instance.ok());
  EXPECT_EQ(first->ids, again->ids);
  EXPECT_EQ(first->labels, again->labels);
  EXPECT_EQ(first->ids, other_instance->ids);
  EXPECT_EQ(first->labels, other_instance->labels);
}

TEST(SyntheticCtrTest, ExampleDependsOnItsIndexAloneNotOnTheRange) {
  auto data = *SyntheticCtrDataset::Create(Small());
  auto whole = *data->Read(0, 300);
  std::vector<int64_t> ids;
  std::vector<int32_t> labels;
  for (int64_t begin = 0; begin < 300; begin += 37) {
    auto piece = *data->Read(begin, std::min<int64_t>(begin + 37, 300));
    ids.insert(ids.end(), piece.ids.begin(), piece.ids.end());
    labels.insert(labels.end(), piece.labels.begin(), piece.labels.end());
  }
  EXPECT_EQ(ids, whole.ids);
  EXPECT_EQ(labels, whole.labels);
}

TEST(SyntheticCtrTest, OneEntryPerFieldWithIdsInTheIdSpace) {
  auto data = *SyntheticCtrDataset::Create(Small());
  EXPECT_EQ(data->dim(), 1 << 16);
  auto batch = *data->Read(0, 1000);
  EXPECT_EQ(batch.num_entries(), 5 * 1000);
  for (int64_t r = 0; r < batch.num_rows; ++r) {
    ASSERT_EQ(batch.row_offsets[r + 1] - batch.row_offsets[r], 5);
    for (int32_t f = 0; f < 5; ++f) EXPECT_EQ(batch.fields[batch.row_offsets[r] + f], f);
  }
  for (const int64_t id : batch.ids) ASSERT_TRUE(id >= 0 && id < (1 << 16));
  for (const float v : batch.values) ASSERT_EQ(v, 1.0f);
  // The category distribution is skewed but wide: many distinct ids appear.
  EXPECT_GT(std::set<int64_t>(batch.ids.begin(), batch.ids.end()).size(), 300u);
}

TEST(SyntheticCtrTest, LabelsFollowTheHiddenModel) {
  auto data = *SyntheticCtrDataset::Create(Small());
  auto batch = *data->Read(0, 20000);
  double clicks = 0;
  double expected = 0;
  for (int64_t i = 0; i < batch.num_rows; ++i) {
    clicks += batch.labels[i];
    expected += data->TrueProbability(i);
  }
  // A Bernoulli sum over 20,000 draws: within 4 standard deviations (about 4 * 65).
  EXPECT_NEAR(clicks, expected, 300);
  EXPECT_GT(clicks, 0.1 * 20000);
  EXPECT_LT(clicks, 0.9 * 20000);
}

TEST(SyntheticCtrTest, SeedsGiveDifferentData) {
  auto a = *(*SyntheticCtrDataset::Create(Small(1)))->Read(0, 100);
  auto b = *(*SyntheticCtrDataset::Create(Small(2)))->Read(0, 100);
  EXPECT_NE(a.ids, b.ids);
}

TEST(SyntheticCtrTest, RejectsBadOptions) {
  SyntheticCtrOptions options = Small();
  options.num_fields = 0;
  EXPECT_EQ(SyntheticCtrDataset::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = Small();
  options.id_space = 0;
  EXPECT_FALSE(SyntheticCtrDataset::Create(options).ok());
}

}  // namespace
}  // namespace tj::train
