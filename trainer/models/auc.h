// Area under the ROC curve of binary predictions: the probability that a random positive example
// scores above a random negative one (ties count one half). The CTR models' quality metric.
#pragma once

#include <cstdint>
#include <span>

#include "absl/status/statusor.h"

namespace tj::train {

// O(n log n): one sort, tied scores get their average rank. InvalidArgument if the spans differ
// in size or a label is not 0/1; FailedPrecondition if only one class is present (AUC undefined).
absl::StatusOr<double> Auc(std::span<const float> scores, std::span<const int32_t> labels);

}  // namespace tj::train
