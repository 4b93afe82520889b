#include "trainer/data/sparse_dataset.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace tj::train {

absl::StatusOr<std::unique_ptr<SparseDataset>> SparseDataset::Create(int64_t dim,
                                                                     int32_t num_classes,
                                                                     SparseRows rows) {
  if (dim <= 0) return absl::InvalidArgumentError(absl::StrCat("dim must be > 0, got ", dim));
  if (num_classes < 1) {
    return absl::InvalidArgumentError(absl::StrCat("num_classes must be >= 1, got ", num_classes));
  }
  const size_t n = rows.labels.size();
  if (rows.row_offsets.size() != n + 1 || rows.row_offsets.front() != 0 ||
      rows.row_offsets.back() != static_cast<int64_t>(rows.ids.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("row_offsets must have ", n + 1, " entries from 0 to ", rows.ids.size()));
  }
  if (rows.values.size() != rows.ids.size() ||
      (!rows.fields.empty() && rows.fields.size() != rows.ids.size())) {
    return absl::InvalidArgumentError(absl::StrCat("ids (", rows.ids.size(), "), values (",
                                                   rows.values.size(), ") and fields (",
                                                   rows.fields.size(), ") disagree in size"));
  }
  for (size_t r = 0; r < n; ++r) {
    if (rows.row_offsets[r] > rows.row_offsets[r + 1]) {
      return absl::InvalidArgumentError(absl::StrCat("row_offsets decrease at row ", r));
    }
    if (rows.labels[r] < 0 || rows.labels[r] >= num_classes) {
      return absl::InvalidArgumentError(absl::StrCat("label of example ", r, " is ", rows.labels[r],
                                                     ", outside [0, ", num_classes, ")"));
    }
  }
  for (size_t i = 0; i < rows.ids.size(); ++i) {
    if (rows.ids[i] < 0 || rows.ids[i] >= dim) {
      return absl::InvalidArgumentError(
          absl::StrCat("id ", rows.ids[i], " at entry ", i, " is outside [0, ", dim, ")"));
    }
  }
  return std::unique_ptr<SparseDataset>(new SparseDataset(dim, num_classes, std::move(rows)));
}

absl::Status SparseDataset::AppendRange(int64_t begin, int64_t end, Batch& batch) const {
  const int64_t first = rows_.row_offsets[begin];
  const int64_t last = rows_.row_offsets[end];
  // The rows' entries land after the batch's: shift their offsets by the difference.
  const int64_t shift = batch.num_entries() - first;
  for (int64_t r = begin + 1; r <= end; ++r)
    batch.row_offsets.push_back(rows_.row_offsets[r] + shift);
  batch.ids.insert(batch.ids.end(), rows_.ids.begin() + first, rows_.ids.begin() + last);
  batch.values.insert(batch.values.end(), rows_.values.begin() + first,
                      rows_.values.begin() + last);
  if (!rows_.fields.empty()) {
    batch.fields.insert(batch.fields.end(), rows_.fields.begin() + first,
                        rows_.fields.begin() + last);
  }
  batch.labels.insert(batch.labels.end(), rows_.labels.begin() + begin, rows_.labels.begin() + end);
  batch.num_rows += end - begin;
  return absl::OkStatus();
}

}  // namespace tj::train
