// A sparse dataset held in memory in CSR form (row offsets, ids, values, optional fields), plus
// labels. The LibSVM reader produces it; tests and tools can build one directly.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/data/dataset.h"

namespace tj::train {

struct SparseRows {
  std::vector<int64_t> row_offsets{0};  // num_examples + 1, starts at 0, non-decreasing
  std::vector<int64_t> ids;             // each in [0, dim)
  std::vector<float> values;            // same size as ids
  std::vector<int32_t> fields;          // empty, or same size as ids
  std::vector<int32_t> labels;          // num_examples, each in [0, num_classes)
};

class SparseDataset : public Dataset {
 public:
  // InvalidArgument if the arrays are inconsistent, an id is outside [0, dim) or a label outside
  // [0, num_classes).
  static absl::StatusOr<std::unique_ptr<SparseDataset>> Create(int64_t dim, int32_t num_classes,
                                                               SparseRows rows);

  int64_t num_examples() const override { return static_cast<int64_t>(rows_.labels.size()); }
  BatchKind kind() const override { return BatchKind::kSparse; }
  int64_t dim() const override { return dim_; }
  int32_t num_classes() const override { return num_classes_; }

 protected:
  // O(end - begin + entries in the range): contiguous copies of the CSR slices.
  absl::Status AppendRange(int64_t begin, int64_t end, Batch& batch) const override;

 private:
  SparseDataset(int64_t dim, int32_t num_classes, SparseRows rows)
      : dim_(dim), num_classes_(num_classes), rows_(std::move(rows)) {}

  int64_t dim_;
  int32_t num_classes_;
  SparseRows rows_;
};

}  // namespace tj::train
