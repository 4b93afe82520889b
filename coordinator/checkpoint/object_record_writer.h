// Records framed straight into an object upload, with no local file on the way: each record's
// frame and bytes are appended to the upload (ObjectUpload buffers one part and sends it when it
// fills, so memory stays at one part whatever the shard's size), and the object's CRC-32C is
// folded from each record's own CRC as a RecordFileWriter's is. Dropped before Finish(), or after
// any error, the upload is abandoned (a multipart upload aborted): nothing half-written appears.
#pragma once

#include <memory>

#include "coordinator/checkpoint/object_store.h"
#include "coordinator/checkpoint/record_writer.h"

namespace tj {

class ObjectRecordWriter : public RecordWriter {
 public:
  explicit ObjectRecordWriter(ObjectUploadPtr upload) : upload_(std::move(upload)) {}

  uint64_t bytes() const override { return digest_.bytes; }
  absl::Status Append(std::span<const std::string_view> pieces) override;
  absl::StatusOr<FileDigest> Finish() override;

 private:
  ObjectUploadPtr upload_;
  FileDigest digest_;
};

}  // namespace tj
