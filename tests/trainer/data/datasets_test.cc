// The in-memory datasets and the Dataset contract every implementation shares.
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "trainer/data/dense_dataset.h"
#include "trainer/data/sparse_dataset.h"

namespace tj::train {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::unique_ptr<DenseDataset> ThreeRows() {
  return *DenseDataset::Create(2, 3, {1, 2, 3, 4, 5, 6}, {0, 1, 2});
}

TEST(DenseDatasetTest, ReadsRowsOfARange) {
  auto data = ThreeRows();
  auto batch = data->Read(1, 3);
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->num_rows, 2);
  EXPECT_EQ(batch->dim, 2);
  EXPECT_THAT(batch->dense, ElementsAre(3, 4, 5, 6));
  EXPECT_THAT(batch->labels, ElementsAre(1, 2));
  EXPECT_THAT(batch->dense_row(1), ElementsAre(5, 6));
}

TEST(DenseDatasetTest, EmptyRangeIsAnEmptyBatch) {
  auto batch = ThreeRows()->Read(2, 2);
  ASSERT_TRUE(batch.ok());
  EXPECT_EQ(batch->num_rows, 0);
  EXPECT_TRUE(batch->dense.empty());
}

TEST(DenseDatasetTest, ReusedBatchIsReplacedNotAppended) {
  auto data = ThreeRows();
  Batch batch;
  ASSERT_TRUE(data->Read(0, 3, batch).ok());
  ASSERT_TRUE(data->Read(2, 3, batch).ok());
  EXPECT_THAT(batch.dense, ElementsAre(5, 6));
  EXPECT_THAT(batch.labels, ElementsAre(2));
}

TEST(DenseDatasetTest, AppendGathersSeveralRanges) {
  auto data = ThreeRows();
  Batch batch;
  ASSERT_TRUE(data->Append(2, 3, batch).ok());  // an empty batch takes the dataset's kind and dim
  ASSERT_TRUE(data->Append(0, 1, batch).ok());
  EXPECT_EQ(batch.num_rows, 2);
  EXPECT_THAT(batch.dense, ElementsAre(5, 6, 1, 2));
  EXPECT_THAT(batch.labels, ElementsAre(2, 0));
  auto other = *DenseDataset::Create(3, 3, {1, 2, 3}, {0});
  EXPECT_EQ(other->Append(0, 1, batch).code(), absl::StatusCode::kInvalidArgument);
}

TEST(DenseDatasetTest, BadRangesAreErrors) {
  auto data = ThreeRows();
  EXPECT_EQ(data->Read(2, 1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(data->Read(-1, 1).status().code(), absl::StatusCode::kOutOfRange);
  auto past = data->Read(0, 4);
  EXPECT_EQ(past.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_THAT(past.status().message(), HasSubstr("[0, 4) is outside the dataset's [0, 3)"));
}

TEST(DenseDatasetTest, CreateChecksShapesAndLabels) {
  EXPECT_FALSE(DenseDataset::Create(2, 3, {1, 2, 3}, {0, 1}).ok());
  EXPECT_FALSE(DenseDataset::Create(0, 3, {}, {}).ok());
  auto label = DenseDataset::Create(1, 2, {1, 2}, {0, 2});
  EXPECT_THAT(label.status().message(), HasSubstr("label of example 1 is 2, outside [0, 2)"));
}

TEST(SparseDatasetTest, ReadsCsrSlicesRebasedToZero) {
  SparseRows rows{.row_offsets = {0, 2, 2, 5},
                  .ids = {1, 4, 0, 2, 3},
                  .values = {1, 2, 3, 4, 5},
                  .fields = {0, 1, 0, 1, 2},
                  .labels = {1, 0, 1}};
  auto data = SparseDataset::Create(5, 2, std::move(rows));
  ASSERT_TRUE(data.ok()) << data.status();
  auto batch = (*data)->Read(1, 3);
  ASSERT_TRUE(batch.ok());
  EXPECT_THAT(batch->row_offsets, ElementsAre(0, 0, 3));
  EXPECT_THAT(batch->ids, ElementsAre(0, 2, 3));
  EXPECT_THAT(batch->values, ElementsAre(3, 4, 5));
  EXPECT_THAT(batch->fields, ElementsAre(0, 1, 2));
  EXPECT_THAT(batch->labels, ElementsAre(0, 1));
}

TEST(SparseDatasetTest, AppendShiftsRowOffsets) {
  SparseRows rows{.row_offsets = {0, 2, 3},
                  .ids = {1, 4, 0},
                  .values = {1, 2, 3},
                  .fields = {},
                  .labels = {1, 0}};
  auto data = *SparseDataset::Create(5, 2, std::move(rows));
  Batch batch;
  ASSERT_TRUE(data->Append(1, 2, batch).ok());
  ASSERT_TRUE(data->Append(0, 2, batch).ok());
  EXPECT_THAT(batch.row_offsets, ElementsAre(0, 1, 3, 4));
  EXPECT_THAT(batch.ids, ElementsAre(0, 1, 4, 0));
  EXPECT_THAT(batch.labels, ElementsAre(0, 1, 0));
  EXPECT_TRUE(batch.fields.empty());
}

TEST(SparseDatasetTest, CreateChecksConsistency) {
  EXPECT_THAT(
      SparseDataset::Create(
          3, 2, {.row_offsets = {0, 1}, .ids = {3}, .values = {1}, .fields = {}, .labels = {0}})
          .status()
          .message(),
      HasSubstr("id 3 at entry 0 is outside [0, 3)"));
  EXPECT_FALSE(
      SparseDataset::Create(
          3, 2, {.row_offsets = {0, 2}, .ids = {1}, .values = {1}, .fields = {}, .labels = {0}})
          .ok());
  EXPECT_FALSE(
      SparseDataset::Create(
          3, 2, {.row_offsets = {0, 1}, .ids = {1}, .values = {}, .fields = {}, .labels = {0}})
          .ok());
}

}  // namespace
}  // namespace tj::train
