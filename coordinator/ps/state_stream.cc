#include "coordinator/ps/state_stream.h"

#include <google/protobuf/io/coded_stream.h>

#include <climits>

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
// StateRecord.rows and Rows' fields.
constexpr uint32_t kRowsField = 5;
constexpr uint32_t kIdsField = 1;
constexpr uint32_t kRowDataField = 2;
constexpr uint32_t kStepsField = 3;

using google::protobuf::io::CodedInputStream;

CodedInputStream InputOver(std::string_view bytes) {
  return CodedInputStream(reinterpret_cast<const uint8_t*>(bytes.data()),
                          static_cast<int>(bytes.size()));
}

// The contents of `record` when it is exactly one length-delimited field `field`.
std::optional<std::string_view> OnlyMessageField(std::string_view record, uint32_t field) {
  if (record.size() > INT_MAX) return std::nullopt;
  CodedInputStream in = InputOver(record);
  uint32_t length = 0;
  if (in.ReadTag() != ((field << 3) | kLengthDelimited) || !in.ReadVarint32(&length)) {
    return std::nullopt;
  }
  const auto start = static_cast<size_t>(in.CurrentPosition());
  if (length != record.size() - start) return std::nullopt;
  return record.substr(start);
}

// Calls on_varint(field, value) / on_bytes(field, view) for each field of `message`; false at the
// first field either refuses or at anything malformed.
template <typename OnVarint, typename OnBytes>
bool ForEachField(std::string_view message, OnVarint on_varint, OnBytes on_bytes) {
  CodedInputStream in = InputOver(message);
  while (static_cast<size_t>(in.CurrentPosition()) < message.size()) {
    const uint32_t tag = in.ReadTag();
    const uint32_t field = tag >> 3;
    if ((tag & 7u) == kVarint) {
      uint64_t value = 0;
      if (!in.ReadVarint64(&value) || !on_varint(field, value)) return false;
    } else if ((tag & 7u) == kLengthDelimited) {
      uint32_t length = 0;
      if (!in.ReadVarint32(&length)) return false;
      const auto start = static_cast<size_t>(in.CurrentPosition());
      if (length > message.size() - start) return false;
      if (!on_bytes(field, message.substr(start, length)) || !in.Skip(static_cast<int>(length))) {
        return false;
      }
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<DenseChunkView> ViewDenseChunk(std::string_view record) {
  const std::optional<std::string_view> message = OnlyMessageField(record, kDenseChunkField);
  if (!message.has_value()) return std::nullopt;
  DenseChunkView view;
  const bool ok = ForEachField(
      *message,
      [&view](uint32_t field, uint64_t value) {
        // Protobuf's conversions: an int32 keeps the low 32 bits of its varint.
        if (field == kSlotField) view.slot = static_cast<int32_t>(static_cast<uint32_t>(value));
        if (field == kOffsetField) view.offset = static_cast<int64_t>(value);
        return field == kSlotField || field == kOffsetField;
      },
      [&view](uint32_t field, std::string_view bytes) {
        if (field != kDataField) return false;
        view.data = bytes;
        return true;
      });
  if (!ok) return std::nullopt;
  return view;
}

std::optional<DenseChunkHead> ViewDenseChunkHead(std::string_view head, uint64_t record_size) {
  if (head.size() > record_size || record_size > INT_MAX) return std::nullopt;
  CodedInputStream in = InputOver(head);
  uint32_t length = 0;
  if (in.ReadTag() != ((kDenseChunkField << 3) | kLengthDelimited) || !in.ReadVarint32(&length) ||
      length != record_size - static_cast<uint64_t>(in.CurrentPosition())) {
    return std::nullopt;
  }
  DenseChunkHead chunk;
  uint32_t tag = in.ReadTag();
  uint64_t value = 0;
  if (tag == ((kSlotField << 3) | kVarint)) {
    if (!in.ReadVarint64(&value)) return std::nullopt;
    chunk.slot = static_cast<int32_t>(static_cast<uint32_t>(value));
    tag = in.ReadTag();
  }
  if (tag == ((kOffsetField << 3) | kVarint)) {
    if (!in.ReadVarint64(&value)) return std::nullopt;
    chunk.offset = static_cast<int64_t>(value);
    tag = in.ReadTag();
  }
  uint32_t data_size = 0;
  if (tag != ((kDataField << 3) | kLengthDelimited) || !in.ReadVarint32(&data_size)) {
    return std::nullopt;
  }
  chunk.data_start = static_cast<size_t>(in.CurrentPosition());
  chunk.data_size = data_size;
  // The data must be the last field, running to the record's end.
  if (chunk.data_start + chunk.data_size != record_size) return std::nullopt;
  return chunk;
}

std::optional<RowsView> ViewRows(std::string_view record) {
  const std::optional<std::string_view> message = OnlyMessageField(record, kRowsField);
  if (!message.has_value()) return std::nullopt;
  RowsView view;
  const bool ok = ForEachField(
      *message, [](uint32_t, uint64_t) { return false; },
      [&view](uint32_t field, std::string_view bytes) {
        switch (field) {
          case kIdsField:
            view.ids = bytes;
            return true;
          case kRowDataField:
            view.data = bytes;
            return true;
          case kStepsField:
            view.steps = bytes;
            return true;
          default:
            return false;
        }
      });
  if (!ok) return std::nullopt;
  return view;
}

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
