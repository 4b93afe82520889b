// The Dataset interface: a fixed number of examples, read by index range [begin, end). Closures
// carry the range they train on (dynamic sharding), so a range lost with a worker is simply read
// again elsewhere: every implementation returns exactly the same examples for the same range.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/data/batch.h"

namespace tj::train {

// Implementations are immutable once built: Read and Append are const, deterministic and safe to
// call from several threads at once.
class Dataset {
 public:
  virtual ~Dataset() = default;

  virtual int64_t num_examples() const = 0;
  virtual BatchKind kind() const = 0;
  // Dense: features per example. Sparse: size of the id space (every id is < dim()).
  virtual int64_t dim() const = 0;
  // Labels are in [0, num_classes()); 2 for binary data.
  virtual int32_t num_classes() const = 0;

  // Replaces the contents of `batch` with examples [begin, end), reusing its buffers.
  // InvalidArgument if begin > end, OutOfRange if the range is not within [0, num_examples()).
  absl::Status Read(int64_t begin, int64_t end, Batch& batch) const;
  absl::StatusOr<Batch> Read(int64_t begin, int64_t end) const;

  // Appends examples [begin, end) after the rows already in `batch` (a closure may carry several
  // ranges; a split view gathers several runs). A batch with no rows is reset to this dataset's
  // kind and dim first; a non-empty batch of another kind or dim is InvalidArgument.
  absl::Status Append(int64_t begin, int64_t end, Batch& batch) const;

 protected:
  // Appends a checked, non-empty range to a batch of kind() and dim(): the one method
  // implementations provide.
  virtual absl::Status AppendRange(int64_t begin, int64_t end, Batch& batch) const = 0;
};

}  // namespace tj::train
