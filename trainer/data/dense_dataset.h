// A dense dataset held in memory: num_examples x dim floats in one contiguous block, plus labels.
// The CSV reader produces it; tests and tools can build one directly.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/data/dataset.h"

namespace tj::train {

class DenseDataset : public Dataset {
 public:
  // features: num_examples * dim floats, row-major; labels: one per example, in [0, num_classes).
  // InvalidArgument if the sizes disagree or a label is out of range.
  static absl::StatusOr<std::unique_ptr<DenseDataset>> Create(int64_t dim, int32_t num_classes,
                                                              std::vector<float> features,
                                                              std::vector<int32_t> labels);

  int64_t num_examples() const override { return static_cast<int64_t>(labels_.size()); }
  BatchKind kind() const override { return BatchKind::kDense; }
  int64_t dim() const override { return dim_; }
  int32_t num_classes() const override { return num_classes_; }

 protected:
  // O((end - begin) * dim): one contiguous copy of the rows.
  absl::Status AppendRange(int64_t begin, int64_t end, Batch& batch) const override;

 private:
  DenseDataset(int64_t dim, int32_t num_classes, std::vector<float> features,
               std::vector<int32_t> labels)
      : dim_(dim),
        num_classes_(num_classes),
        features_(std::move(features)),
        labels_(std::move(labels)) {}

  int64_t dim_;
  int32_t num_classes_;
  std::vector<float> features_;
  std::vector<int32_t> labels_;
};

}  // namespace tj::train
