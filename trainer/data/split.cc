#include "trainer/data/split.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"

namespace tj::train {

SplitDataset::SplitDataset(std::shared_ptr<const Dataset> source, int64_t period, int64_t first,
                           int64_t width)
    : source_(std::move(source)), period_(period), first_(first), width_(width) {
  const int64_t n = source_->num_examples();
  // Whole blocks, then the part of the last, partial block that falls in [first, first + width).
  count_ =
      width_ == 0 ? 0 : n / period_ * width_ + std::clamp(n % period_ - first_, int64_t{0}, width_);
}

absl::Status SplitDataset::AppendRange(int64_t begin, int64_t end, Batch& batch) const {
  for (int64_t j = begin; j < end;) {
    const int64_t run = std::min(end - j, width_ - j % width_);
    const int64_t source_begin = SourceIndex(j);
    TJ_RETURN_IF_ERROR(source_->Append(source_begin, source_begin + run, batch));
    j += run;
  }
  return absl::OkStatus();
}

absl::StatusOr<TrainTestSplit> SplitTrainTest(std::shared_ptr<const Dataset> source,
                                              int test_percent, SplitRule rule) {
  if (source == nullptr) return absl::InvalidArgumentError("SplitTrainTest needs a dataset");
  if (test_percent < 0 || test_percent >= 100) {
    return absl::InvalidArgumentError(
        absl::StrCat("test_percent must be in [0, 100), got ", test_percent));
  }
  const int64_t n = source->num_examples();
  int64_t period = 0;
  int64_t test = 0;  // test examples per period
  if (rule == SplitRule::kInterleaved) {
    const int64_t divisor = std::gcd(int64_t{test_percent}, int64_t{100});
    period = 100 / divisor;
    test = test_percent / divisor;
  } else {
    // One block holding the whole dataset.
    period = std::max<int64_t>(n, 1);
    test = test_percent == 0 ? 0 : std::max<int64_t>(n * test_percent / 100, 1);
    test = std::min(test, period);
  }
  TrainTestSplit split;
  split.train.reset(new SplitDataset(source, period, 0, period - test));
  split.test.reset(new SplitDataset(std::move(source), period, period - test, test));
  if (split.train->num_examples() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("splitting ", n, " examples with test_percent ",
                                                   test_percent, " leaves no training example"));
  }
  return split;
}

}  // namespace tj::train
