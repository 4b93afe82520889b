// TFRecord framing, shared by checkpoint shard files and TensorBoard event files: each record is
// [u64 length][u32 masked crc32c of length][data][u32 masked crc32c of data], little-endian. The
// frame around a record is built apart from its data, so a large record is written without a copy.
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace tj {

inline constexpr size_t kRecordHeaderSize = sizeof(uint64_t) + sizeof(uint32_t);
inline constexpr size_t kRecordFooterSize = sizeof(uint32_t);

// The bytes around one record, plus the CRC of its data (computed once, reused by callers that
// also checksum the whole file).
struct RecordFrame {
  std::array<char, kRecordHeaderSize> header;
  std::array<char, kRecordFooterSize> footer;
  uint32_t data_crc = 0;

  // header, data, footer: ready for one writev. `data` must outlive the iovecs.
  std::array<iovec, 3> Pieces(std::string_view data);
};

RecordFrame FrameRecord(std::string_view data);
// The frame of a record whose data is the concatenation of `pieces` (written with one writev, so
// a record built from a small header and a large view of someone's memory is never joined).
RecordFrame FrameRecord(std::span<const std::string_view> pieces);

// Appends the framed record to `out` (for small records that are buffered anyway).
void AppendFramedRecord(std::string_view data, std::string* out);

// Decodes a header; false when its length CRC does not match.
bool DecodeRecordHeader(const char* header, uint64_t* length);

// Checks a footer against the data it follows.
bool RecordFooterMatches(std::string_view data, const char* footer);

// Little-endian encoders and decoders, byte by byte so host order and alignment do not matter.
void EncodeFixed32(uint32_t value, char* out);
void EncodeFixed64(uint64_t value, char* out);
uint32_t DecodeFixed32(const char* in);
uint64_t DecodeFixed64(const char* in);

}  // namespace tj
