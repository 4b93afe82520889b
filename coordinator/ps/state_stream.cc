#include "coordinator/ps/state_stream.h"

#include "coordinator/ps/proto_wire.h"

namespace tj {
namespace {

using proto_wire::AppendTag;
using proto_wire::AppendVarint;
using proto_wire::kLengthDelimited;
using proto_wire::kVarint;

// Field numbers of StateRecord.dense_chunk and DenseChunk's fields (ps.proto).
constexpr uint32_t kDenseChunkField = 3;
constexpr uint32_t kSlotField = 1;
constexpr uint32_t kOffsetField = 2;
constexpr uint32_t kDataField = 3;

}  // namespace

absl::Status StateWriter::WriteDenseChunk(int32_t slot, int64_t offset, std::string_view data) {
  // Serialized as protobuf would: fields in number order, zeros and empty bytes left out. A
  // negative int32 is sign-extended to ten bytes, as protobuf does (never the case here).
  std::string fields;
  if (slot != 0) {
    AppendTag(kSlotField, kVarint, fields);
    AppendVarint(static_cast<uint64_t>(static_cast<int64_t>(slot)), fields);
  }
  if (offset != 0) {
    AppendTag(kOffsetField, kVarint, fields);
    AppendVarint(static_cast<uint64_t>(offset), fields);
  }
  if (!data.empty()) {
    AppendTag(kDataField, kLengthDelimited, fields);
    AppendVarint(data.size(), fields);
  }
  buffer_.clear();
  AppendTag(kDenseChunkField, kLengthDelimited, buffer_);
  AppendVarint(fields.size() + data.size(), buffer_);
  buffer_.append(fields);
  ++records_;
  const std::string_view pieces[2] = {buffer_, data};
  return sink_(std::span<const std::string_view>(pieces, data.empty() ? 1 : 2));
}

}  // namespace tj
