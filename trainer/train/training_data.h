// The data of a tj-train run: the file (or generator) the configuration names, read once and split
// into training and held-out examples, identically on the coordinator (which checks it before any
// step and knows how many steps an epoch has) and on every worker (which reads the ranges its
// closures carry).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/data/dataset.h"
#include "trainer/train/train_config.h"

namespace tj::train {

struct TrainingData {
  std::shared_ptr<const Dataset> train;
  std::shared_ptr<const Dataset> test;  // may have no examples (--test-percent 0)

  // Batches of the training half per epoch: ceil(train examples / batch size).
  int64_t BatchesPerEpoch(int64_t batch_size) const;
};

// Errors name the file and line (a row of the wrong width, a bad label) or the flag.
absl::StatusOr<TrainingData> LoadTrainingData(const TrainConfig& config);

// Which example range global step `step` trains on: epoch e = step / batches_per_epoch visits the
// batches in an order shuffled by (seed, e), so every epoch sees every example exactly once and a
// step always means the same range, whoever runs it and however often the job restarts.
struct StepRange {
  int64_t epoch = 0;
  int64_t begin = 0;
  int64_t end = 0;
};
class StepSchedule {
 public:
  StepSchedule(int64_t num_examples, int64_t batch_size, uint64_t seed);
  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  StepRange RangeOf(int64_t step);

 private:
  int64_t num_examples_;
  int64_t batch_size_;
  uint64_t seed_;
  int64_t batches_per_epoch_;
  int64_t cached_epoch_ = -1;
  std::vector<int64_t> order_;  // batch indices of cached_epoch_
};

}  // namespace tj::train
