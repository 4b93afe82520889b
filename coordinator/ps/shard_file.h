// Saves a VariableStore's whole state to a local record file and restores it, for the SaveShard and
// RestoreShard RPCs: ExportState / ImportState over coordinator/checkpoint record files.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/checkpoint/file_digest.h"
#include "coordinator/ps/variable_store.h"
#include "tj/v1/ps.pb.h"

namespace tj {

struct ShardFileOptions {
  // Told the bytes written to / read from the file so far after every record (`total` is the
  // file's size for a restore, 0 for a save). An error stops the save or restore with it (the
  // caller went away); the file is then not committed, or the store left unchanged.
  std::function<absl::Status(int64_t bytes, int64_t total)> on_progress;
  // Test only: caps the rate at which records are written or read, to play a slow volume in tests
  // of real processes (the PS reads it from TJ_TEST_SHARD_BYTES_PER_SECOND). 0: no cap.
  int64_t test_bytes_per_second = 0;
  // Restore only: the size and CRC-32C the whole file must have (its manifest's digest), checked as
  // it is read; a mismatch is DataLoss naming the file, and the store is left unchanged.
  std::optional<FileDigest> expected_digest;
};

// Writes `path` atomically (temp file, fsync, rename). Errors name the path.
absl::StatusOr<v1::SaveShardResponse> SaveShardFile(const VariableStore& store,
                                                    const std::string& path,
                                                    const ShardFileOptions& options = {});

// Replaces the store's state with the file's, reading it once: every record's CRC is checked, dense
// chunks land straight in the new variables, and the file's digest (options.expected_digest) is
// derived from the records' CRCs. NotFound for a missing file, DataLoss naming the file for a
// truncated or corrupt one or another digest (the store is then unchanged).
absl::StatusOr<v1::RestoreShardResponse> RestoreShardFile(VariableStore& store,
                                                          const std::string& path,
                                                          const ShardFileOptions& options = {});

}  // namespace tj
