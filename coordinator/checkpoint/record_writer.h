// Where a checkpoint shard's records go: a local file (RecordFileWriter, record_file.h) or straight
// into an object upload (ObjectRecordWriter, object_record_writer.h). Both frame records the same
// way (record_framing.h) and report the digest of the bytes they wrote, so a shard is the same
// bytes wherever it lands, and nothing is visible until Finish() succeeds.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/checkpoint/file_digest.h"

namespace tj {

class RecordWriter {
 public:
  virtual ~RecordWriter() = default;  // without a successful Finish() nothing appears

  // Bytes appended so far, framing included.
  virtual uint64_t bytes() const = 0;
  // One record, the concatenation of `pieces` (never joined into one buffer by the caller).
  virtual absl::Status Append(std::span<const std::string_view> pieces) = 0;
  // Makes the records visible (commits the file, completes the upload); their size and CRC-32C.
  virtual absl::StatusOr<FileDigest> Finish() = 0;
};

}  // namespace tj
