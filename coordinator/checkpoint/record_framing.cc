#include "coordinator/checkpoint/record_framing.h"

#include "coordinator/checkpoint/crc32c.h"

namespace tj {

void EncodeFixed32(uint32_t value, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xffu);
}

void EncodeFixed64(uint64_t value, char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xffu);
}

uint32_t DecodeFixed32(const char* in) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= uint32_t{static_cast<unsigned char>(in[i])} << (8 * i);
  return value;
}

uint64_t DecodeFixed64(const char* in) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= uint64_t{static_cast<unsigned char>(in[i])} << (8 * i);
  return value;
}

std::array<iovec, 3> RecordFrame::Pieces(std::string_view data) {
  return {iovec{header.data(), header.size()}, iovec{const_cast<char*>(data.data()), data.size()},
          iovec{footer.data(), footer.size()}};
}

RecordFrame FrameRecord(std::string_view data) {
  return FrameRecord(std::span<const std::string_view>(&data, 1));
}

RecordFrame FrameRecord(std::span<const std::string_view> pieces) {
  RecordFrame frame;
  uint64_t size = 0;
  uint32_t crc = 0;
  for (std::string_view piece : pieces) {
    size += piece.size();
    crc = crc32c::Extend(crc, piece.data(), piece.size());
  }
  EncodeFixed64(size, frame.header.data());
  EncodeFixed32(crc32c::Mask(crc32c::Value(frame.header.data(), sizeof(uint64_t))),
                frame.header.data() + sizeof(uint64_t));
  frame.data_crc = crc;
  EncodeFixed32(crc32c::Mask(frame.data_crc), frame.footer.data());
  return frame;
}

void AppendFramedRecord(std::string_view data, std::string* out) {
  const RecordFrame frame = FrameRecord(data);
  out->reserve(out->size() + kRecordHeaderSize + data.size() + kRecordFooterSize);
  out->append(frame.header.data(), frame.header.size());
  out->append(data.data(), data.size());
  out->append(frame.footer.data(), frame.footer.size());
}

bool DecodeRecordHeader(const char* header, uint64_t* length) {
  const uint32_t expected = crc32c::Unmask(DecodeFixed32(header + sizeof(uint64_t)));
  if (crc32c::Value(header, sizeof(uint64_t)) != expected) return false;
  *length = DecodeFixed64(header);
  return true;
}

bool RecordFooterMatches(std::string_view data, const char* footer) {
  return crc32c::Value(data) == crc32c::Unmask(DecodeFixed32(footer));
}

}  // namespace tj
