#include "trainer/data/split.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainer/data/dense_dataset.h"

namespace tj::train {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

// Example i has the single feature i, so a batch shows which source examples it holds.
std::shared_ptr<const Dataset> Rows(int n) {
  std::vector<float> features(static_cast<size_t>(n));
  std::iota(features.begin(), features.end(), 0.0f);
  return std::shared_ptr<const Dataset>(
      *DenseDataset::Create(1, 1, std::move(features), std::vector<int32_t>(n, 0)));
}

std::vector<float> All(const Dataset& data) { return data.Read(0, data.num_examples())->dense; }

TEST(SplitTest, InterleavedTwentyPercentIsEveryFifthExample) {
  auto split = SplitTrainTest(Rows(12), 20);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_THAT(All(*split->test), ElementsAre(4, 9));
  EXPECT_THAT(All(*split->train), ElementsAre(0, 1, 2, 3, 5, 6, 7, 8, 10, 11));
  EXPECT_EQ(split->train->SourceIndex(4), 5);
  EXPECT_EQ(split->test->SourceIndex(1), 9);
}

TEST(SplitTest, InterleavedPercentWithoutCommonFactorUsesBlocksOfHundred) {
  auto split = *SplitTrainTest(Rows(250), 33);
  // Blocks [0,100) and [100,200) give 33 each; of [200,250), positions 67.. are past the end.
  EXPECT_EQ(split.test->num_examples(), 66);
  EXPECT_EQ(split.train->num_examples(), 184);
  EXPECT_EQ(split.test->SourceIndex(0), 67);
  EXPECT_EQ(split.test->SourceIndex(33), 167);
}

TEST(SplitTest, HalvesPartitionTheSource) {
  for (const int n : {1, 7, 100, 1797}) {
    for (const int percent : {0, 1, 20, 33, 50, 99}) {
      for (const SplitRule rule : {SplitRule::kInterleaved, SplitRule::kTail}) {
        auto split = SplitTrainTest(Rows(n), percent, rule);
        if (!split.ok()) continue;  // no training example left: checked below
        std::vector<float> both = All(*split->train);
        const std::vector<float> test = All(*split->test);
        both.insert(both.end(), test.begin(), test.end());
        std::sort(both.begin(), both.end());
        std::vector<float> expected(n);
        std::iota(expected.begin(), expected.end(), 0.0f);
        EXPECT_THAT(both, ElementsAreArray(expected)) << n << " " << percent;
      }
    }
  }
}

TEST(SplitTest, RangesCrossingBlocksGatherRuns) {
  auto split = *SplitTrainTest(Rows(20), 20);
  auto batch = split.train->Read(2, 9);  // train examples 2..8: source 2,3 | 5,6,7,8 | 10
  ASSERT_TRUE(batch.ok());
  EXPECT_THAT(batch->dense, ElementsAre(2, 3, 5, 6, 7, 8, 10));
  EXPECT_EQ(batch->num_rows, 7);
  EXPECT_EQ(split.train->Read(0, 17).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(SplitTest, TailIsTheLastFloorPercent) {
  auto split = *SplitTrainTest(Rows(10), 25, SplitRule::kTail);
  EXPECT_THAT(All(*split.test), ElementsAre(8, 9));
  EXPECT_EQ(split.train->num_examples(), 8);
  EXPECT_EQ((*SplitTrainTest(Rows(1797), 20, SplitRule::kTail)).test->num_examples(), 359);
  EXPECT_EQ((*SplitTrainTest(Rows(10), 1, SplitRule::kTail)).test->num_examples(), 1);
}

TEST(SplitTest, RejectsBadPercentages) {
  EXPECT_FALSE(SplitTrainTest(Rows(10), 100).ok());
  EXPECT_FALSE(SplitTrainTest(Rows(10), -1).ok());
  EXPECT_FALSE(SplitTrainTest(Rows(1), 50, SplitRule::kTail).ok());  // all would be test
  EXPECT_FALSE(SplitTrainTest(nullptr, 20).ok());
  auto none = SplitTrainTest(Rows(4), 0);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->test->num_examples(), 0);
  EXPECT_EQ(none->test->Read(0, 0)->num_rows, 0);
}

}  // namespace
}  // namespace tj::train
