// Saves a VariableStore's whole state to a local record file and restores it, for the SaveShard and
// RestoreShard RPCs: ExportState / ImportState over coordinator/checkpoint record files.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/checkpoint/file_digest.h"
#include "coordinator/checkpoint/record_writer.h"
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
  // Saves only: the checkpoint save this is, and the one a delta may be made since (ExportOptions).
  ExportOptions save;
  // Restore only: the size and CRC-32C the whole file must have (its manifest's digest), checked as
  // it is read; a mismatch is DataLoss naming the file, and the store is left unchanged.
  std::optional<FileDigest> expected_digest;
  // Restore only: empty, or one digest per delta file (RestoreShardFiles' paths after the first),
  // checked the same way; a delta file that is then missing is DataLoss too (its manifest lists
  // it).
  std::vector<FileDigest> expected_delta_digests;
};

// Writes `path` atomically (temp file, fsync, rename). Errors name the path. The response says
// whether the file is a delta (options.save).
absl::StatusOr<v1::SaveShardResponse> SaveShardFile(const VariableStore& store,
                                                    const std::string& path,
                                                    const ShardFileOptions& options = {});

// The same into any RecordWriter (a file, an object upload), finishing it; errors leave it
// unfinished, so nothing appears.
absl::StatusOr<v1::SaveShardResponse> SaveShardRecords(const VariableStore& store,
                                                       RecordWriter& writer,
                                                       const ShardFileOptions& options = {});

// Replaces the store's state with the file's, or with a full save's file followed by deltas, oldest
// first (`paths`), reading each once: every record's CRC is checked, dense chunks land straight in
// the new variables, and each file's digest (options.expected_digest, expected_delta_digests) is
// derived from the records' CRCs. NotFound for a missing file (DataLoss when it has a digest to
// match), DataLoss for a truncated or corrupt one, another digest, or a delta that is not of the
// save before it (the store is then unchanged); errors name the file.
absl::StatusOr<v1::RestoreShardResponse> RestoreShardFile(VariableStore& store,
                                                          const std::string& path,
                                                          const ShardFileOptions& options = {});
absl::StatusOr<v1::RestoreShardResponse> RestoreShardFiles(VariableStore& store,
                                                           const std::vector<std::string>& paths,
                                                           const ShardFileOptions& options = {});

}  // namespace tj
