// The fallback every checkpoint store (directory, bucket) restores through: the newest committed
// checkpoint below a step that loads and verifies; one that does not is logged and skipped for the
// previous one, so a corrupt newest checkpoint never stops a job, and a job with checkpoints that
// all fail gets DataLoss naming each failure instead of silently starting over.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/checkpoint/checkpoint_store.h"

namespace tj {

// `listings` in ascending step order; `where` names the store in the DataLoss message. A load
// error for which `falls_back` is false (the store itself failing, say) is returned as is.
absl::StatusOr<std::optional<Checkpoint>> NewestLoadableCheckpoint(
    const std::vector<CheckpointListing>& listings, int64_t before_step, std::string_view where,
    const std::function<absl::StatusOr<Checkpoint>(int64_t step)>& load,
    const std::function<bool(const absl::Status&)>& falls_back);

}  // namespace tj
