// SaveShardFile and RestoreShardFiles for shard paths in an s3:// checkpoint location as well as
// local ones: an s3:// shard's records (the same records, CRCs and digest as a file's) go straight
// into a multipart upload as they are produced (ObjectRecordWriter: one part in memory, no local
// file), and a failed save aborts the upload; a restore streams each object down with ranged GETs
// into a scratch file, checking its digest on the way, and restores from those files. Scratch
// files live in TJ_S3_SCRATCH_DIR (default: the temporary directory) and are removed afterwards.
// Local paths go straight to SaveShardFile / RestoreShardFiles.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/ps/shard_file.h"

namespace tj {

// The newest coordinator generation that claimed the checkpoint location `root`: a directory's
// COORDINATOR_GENERATION file (ClaimedGeneration) or an s3:// location's claim object
// (object_generation_claim.h). 0 when none has; a bucket that cannot be read is logged and read
// as 0 too, as an unreadable claim file is: every fenced call that touches the bucket (a save, a
// restore) then fails on its own, and the fence still holds the newest generation seen in calls.
uint64_t ClaimedGenerationAnywhere(const std::string& root);

absl::StatusOr<v1::SaveShardResponse> SaveShardAnywhere(const VariableStore& store,
                                                        const std::string& path,
                                                        const ShardFileOptions& options = {});

absl::StatusOr<v1::RestoreShardResponse> RestoreShardsAnywhere(
    VariableStore& store, const std::vector<std::string>& paths,
    const ShardFileOptions& options = {});

}  // namespace tj
