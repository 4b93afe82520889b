// Deterministic train/test split without copying or storing indices: each half is a view that maps
// its example j to an example of the source by arithmetic, so ranges of a half can be read (and
// re-read after a failure) like ranges of any dataset.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "trainer/data/dataset.h"

namespace tj::train {

enum class SplitRule {
  // Write test_percent / 100 in lowest terms as t / p: example i is a test example iff
  // i mod p >= p - t. 20% puts every 5th example (i mod 5 == 4) in the test set. The test set
  // spans the whole file, so an ordered file (digits: by writer) does not bias it.
  kInterleaved,
  // The test set is the last floor(n * test_percent / 100) examples (at least 1 when
  // test_percent > 0): for time-ordered data, test on the newest.
  kTail,
};

struct TrainTestSplit;

// One half of a split: examples of the source whose position within each block of `period`
// examples is in [first, first + width), renumbered from 0 in source order.
class SplitDataset : public Dataset {
 public:
  int64_t num_examples() const override { return count_; }
  BatchKind kind() const override { return source_->kind(); }
  int64_t dim() const override { return source_->dim(); }
  int32_t num_classes() const override { return source_->num_classes(); }

  // The index in the source of this half's example j: O(1).
  int64_t SourceIndex(int64_t j) const { return j / width_ * period_ + first_ + j % width_; }

 protected:
  // Appends the source's contiguous runs covering [begin, end): one run per block touched.
  absl::Status AppendRange(int64_t begin, int64_t end, Batch& batch) const override;

 private:
  friend absl::StatusOr<TrainTestSplit> SplitTrainTest(std::shared_ptr<const Dataset>, int,
                                                       SplitRule);
  SplitDataset(std::shared_ptr<const Dataset> source, int64_t period, int64_t first, int64_t width);

  std::shared_ptr<const Dataset> source_;
  int64_t period_;
  int64_t first_;
  int64_t width_;
  int64_t count_;
};

struct TrainTestSplit {
  std::unique_ptr<SplitDataset> train;
  std::unique_ptr<SplitDataset> test;
};

// InvalidArgument if test_percent is not in [0, 100) or the training half would be empty.
absl::StatusOr<TrainTestSplit> SplitTrainTest(std::shared_ptr<const Dataset> source,
                                              int test_percent,
                                              SplitRule rule = SplitRule::kInterleaved);

}  // namespace tj::train
