#include "trainer/data/dataset.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"

namespace tj::train {

absl::Status Dataset::Read(int64_t begin, int64_t end, Batch& batch) const {
  batch.Reset(kind(), dim());
  return Append(begin, end, batch);
}

absl::StatusOr<Batch> Dataset::Read(int64_t begin, int64_t end) const {
  Batch batch;
  TJ_RETURN_IF_ERROR(Read(begin, end, batch));
  return batch;
}

absl::Status Dataset::Append(int64_t begin, int64_t end, Batch& batch) const {
  if (begin > end) {
    return absl::InvalidArgumentError(
        absl::StrCat("example range [", begin, ", ", end, ") has begin > end"));
  }
  if (begin < 0 || end > num_examples()) {
    return absl::OutOfRangeError(absl::StrCat("example range [", begin, ", ", end,
                                              ") is outside the dataset's [0, ", num_examples(),
                                              ")"));
  }
  if (batch.num_rows == 0) {
    batch.Reset(kind(), dim());
  } else if (batch.kind != kind() || batch.dim != dim()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot append examples of dim ", dim(),
                                                   " to a batch of another kind or of dim ",
                                                   batch.dim));
  }
  if (begin == end) return absl::OkStatus();
  return AppendRange(begin, end, batch);
}

}  // namespace tj::train
