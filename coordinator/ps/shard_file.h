// Saves a VariableStore's whole state to a local record file and restores it, for the SaveShard and
// RestoreShard RPCs: ExportState / ImportState over coordinator/checkpoint record files.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "coordinator/ps/variable_store.h"
#include "tj/v1/ps.pb.h"

namespace tj {

// Writes `path` atomically (temp file, fsync, rename). Errors name the path.
absl::StatusOr<v1::SaveShardResponse> SaveShardFile(const VariableStore& store,
                                                    const std::string& path);

// Replaces the store's state with the file's. NotFound for a missing file, DataLoss for a truncated
// or corrupt one (the store is then unchanged).
absl::StatusOr<v1::RestoreShardResponse> RestoreShardFile(VariableStore& store,
                                                          const std::string& path);

}  // namespace tj
