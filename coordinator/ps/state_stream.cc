#include "coordinator/ps/state_stream.h"

#include <google/protobuf/io/coded_stream.h>

namespace tj {
namespace {

using google::protobuf::io::CodedOutputStream;

// Field numbers and wire types of StateRecord.dense_chunk and DenseChunk's fields (ps.proto).
constexpr uint32_t kDenseChunkField = 3;
constexpr uint32_t kSlotField = 1;
constexpr uint32_t kOffsetField = 2;
constexpr uint32_t kDataField = 3;
constexpr uint32_t kVarint = 0;
constexpr uint32_t kLengthDelimited = 2;

void AppendVarint(uint64_t value, std::string& out) {
  uint8_t bytes[10];  // the longest varint
  const uint8_t* end = CodedOutputStream::WriteVarint64ToArray(value, bytes);
  out.append(reinterpret_cast<const char*>(bytes), static_cast<size_t>(end - bytes));
}

}  // namespace

absl::Status StateWriter::WriteDenseChunk(int32_t slot, int64_t offset, std::string_view data) {
  // Serialized as protobuf would: fields in number order, zeros and empty bytes left out. A
  // negative int32 is sign-extended to ten bytes, as protobuf does (never the case here).
  std::string fields;
  if (slot != 0) {
    AppendVarint((kSlotField << 3) | kVarint, fields);
    AppendVarint(static_cast<uint64_t>(static_cast<int64_t>(slot)), fields);
  }
  if (offset != 0) {
    AppendVarint((kOffsetField << 3) | kVarint, fields);
    AppendVarint(static_cast<uint64_t>(offset), fields);
  }
  if (!data.empty()) {
    AppendVarint((kDataField << 3) | kLengthDelimited, fields);
    AppendVarint(data.size(), fields);
  }
  buffer_.clear();
  AppendVarint((kDenseChunkField << 3) | kLengthDelimited, buffer_);
  AppendVarint(fields.size() + data.size(), buffer_);
  buffer_.append(fields);
  ++records_;
  const std::string_view pieces[2] = {buffer_, data};
  return sink_(std::span<const std::string_view>(pieces, data.empty() ? 1 : 2));
}

}  // namespace tj
