// The placement of a job's dense variables as a checkpoint records it: which slices of which
// variable each PS task's shard file holds. A checkpoint restored into another placement would
// give the PS tasks slices the workers never ask for (or silently the wrong rows), so the training
// loop compares the record with the current plan before restoring anything.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "coordinator/ps/placement.h"
#include "nlohmann/json.hpp"

namespace tj::sdk {

// {"num_ps", "partitioner", "max_slice_bytes", "variables": [{"name", "shape",
// "slices": [[task, row_begin, row_end], ...]}]}: variables by name, so the record does not depend
// on the order the program lists them in.
nlohmann::json PlacementRecord(const PsPlacement& placement);

// OK when `recorded` is null (a checkpoint older than the record: nothing to compare) or puts
// every variable in the same slices on the same tasks as `current` (the options that produced
// them may differ); otherwise FailedPrecondition naming the checkpoint and the first difference.
absl::Status CheckPlacementRecord(const nlohmann::json& recorded, const nlohmann::json& current,
                                  const std::string& checkpoint_dir);

// One line for logs: "softmax/w [64,10] 1 slice on task 0; ..." (at most a few variables).
std::string DescribePlacement(const PsPlacement& placement);

}  // namespace tj::sdk
