#include "coordinator/checkpoint/object_record_writer.h"

#include "coordinator/base/status_macros.h"
#include "coordinator/checkpoint/crc32c.h"
#include "coordinator/checkpoint/record_framing.h"

namespace tj {

absl::Status ObjectRecordWriter::Append(std::span<const std::string_view> pieces) {
  const RecordFrame frame = FrameRecord(pieces);
  const std::string_view header(frame.header.data(), frame.header.size());
  const std::string_view footer(frame.footer.data(), frame.footer.size());
  uint64_t size = 0;
  TJ_RETURN_IF_ERROR(upload_->Append(header));
  for (const std::string_view piece : pieces) {
    TJ_RETURN_IF_ERROR(upload_->Append(piece));
    size += piece.size();
  }
  TJ_RETURN_IF_ERROR(upload_->Append(footer));
  // The data's CRC was computed once for the frame; the object's follows from it.
  uint32_t crc = crc32c::Extend(digest_.crc32c, header.data(), header.size());
  crc = crc32c::Combine(crc, frame.data_crc, size);
  digest_.crc32c = crc32c::Extend(crc, footer.data(), footer.size());
  digest_.bytes += header.size() + size + footer.size();
  return absl::OkStatus();
}

absl::StatusOr<FileDigest> ObjectRecordWriter::Finish() {
  TJ_RETURN_IF_ERROR(upload_->Finish());
  return digest_;
}

}  // namespace tj
