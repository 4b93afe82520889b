// The distinct ids of a sparse batch and, for every entry, the slot of its id among them: the
// layout of a parameter-server lookup (pull one row per distinct id) and of the sparse gradient
// pushed back (one summed row per distinct id).
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/data/batch.h"

namespace tj::train {

struct BatchIds {
  std::vector<int64_t> unique;  // distinct ids, in order of first appearance
  std::vector<int32_t> slots;   // per batch entry: the index of its id in `unique`
};

// O(entries) expected time, one hash map. InvalidArgument for a dense batch.
absl::StatusOr<BatchIds> DedupIds(const Batch& batch);

}  // namespace tj::train
