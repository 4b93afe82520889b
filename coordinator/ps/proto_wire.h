// The few pieces of protobuf's wire format that the PS writes by hand: the framing of messages
// whose large `bytes` fields are passed by reference (pull responses, push requests, checkpoint
// chunks) instead of being copied into a serialized message.
#pragma once

#include <google/protobuf/io/coded_stream.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace tj::proto_wire {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

inline void AppendVarint(uint64_t value, std::string& out) {
  uint8_t bytes[10];  // the longest varint
  const uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint64ToArray(value, bytes);
  out.append(reinterpret_cast<const char*>(bytes), static_cast<size_t>(end - bytes));
}

inline void AppendTag(uint32_t field, WireType type, std::string& out) {
  AppendVarint((field << 3) | type, out);
}

inline size_t VarintSize(uint64_t value) {
  return google::protobuf::io::CodedOutputStream::VarintSize64(value);
}

}  // namespace tj::proto_wire
