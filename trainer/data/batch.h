// A batch of examples as the models consume it: dense rows (contiguous floats) or sparse rows
// (CSR: per example a list of (id, value) entries, each with the field it came from), plus labels.
// Datasets fill a caller-owned Batch so a training loop reuses its buffers from step to step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tj::train {

enum class BatchKind { kDense, kSparse };

struct Batch {
  BatchKind kind = BatchKind::kDense;
  int64_t num_rows = 0;
  // Dense: features per row. Sparse: size of the id space (every id is < dim).
  int64_t dim = 0;

  // Dense only: num_rows * dim floats, row-major.
  std::vector<float> dense;

  // Sparse only, CSR: the entries of row r are [row_offsets[r], row_offsets[r + 1]) of ids, values
  // and (when the data has fields) fields. row_offsets has num_rows + 1 elements.
  std::vector<int64_t> row_offsets;
  std::vector<int64_t> ids;
  std::vector<float> values;    // 1.0 for categorical (one-hot) entries
  std::vector<int32_t> fields;  // empty when the data has no fields (LibSVM)

  // One per row: a class index in [0, num_classes); 0 or 1 for binary (CTR) data.
  std::vector<int32_t> labels;

  // Empties the batch and sets its kind and dim, keeping the vectors' capacity.
  void Reset(BatchKind new_kind, int64_t new_dim);

  int64_t num_entries() const { return static_cast<int64_t>(ids.size()); }
  std::span<const float> dense_row(int64_t r) const {
    return {dense.data() + r * dim, static_cast<size_t>(dim)};
  }
};

}  // namespace tj::train
