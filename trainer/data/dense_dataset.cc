#include "trainer/data/dense_dataset.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace tj::train {

absl::StatusOr<std::unique_ptr<DenseDataset>> DenseDataset::Create(int64_t dim, int32_t num_classes,
                                                                   std::vector<float> features,
                                                                   std::vector<int32_t> labels) {
  if (dim <= 0) return absl::InvalidArgumentError(absl::StrCat("dim must be > 0, got ", dim));
  if (num_classes < 1) {
    return absl::InvalidArgumentError(absl::StrCat("num_classes must be >= 1, got ", num_classes));
  }
  if (features.size() != labels.size() * static_cast<size_t>(dim)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "features has ", features.size(), " floats, expected ", labels.size(), " rows x ", dim));
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= num_classes) {
      return absl::InvalidArgumentError(absl::StrCat("label of example ", i, " is ", labels[i],
                                                     ", outside [0, ", num_classes, ")"));
    }
  }
  return std::unique_ptr<DenseDataset>(
      new DenseDataset(dim, num_classes, std::move(features), std::move(labels)));
}

absl::Status DenseDataset::AppendRange(int64_t begin, int64_t end, Batch& batch) const {
  batch.num_rows += end - begin;
  batch.dense.insert(batch.dense.end(), features_.begin() + begin * dim_,
                     features_.begin() + end * dim_);
  batch.labels.insert(batch.labels.end(), labels_.begin() + begin, labels_.begin() + end);
  return absl::OkStatus();
}

}  // namespace tj::train
