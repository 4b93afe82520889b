// CRC-32C (Castagnoli), the checksum of TFRecord framing, checkpoint shards and manifests. Uses the
// SSE4.2 crc32 instruction when the CPU has it (chosen once at run time), a table otherwise, and
// offers TensorFlow's masking and a combine that checksums a concatenation without re-reading it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tj::crc32c {

// The CRC of `data` appended to a stream whose CRC so far is `crc` (0 for an empty stream).
uint32_t Extend(uint32_t crc, const void* data, size_t size);

inline uint32_t Value(const void* data, size_t size) { return Extend(0, data, size); }
inline uint32_t Value(std::string_view data) { return Extend(0, data.data(), data.size()); }

// The CRC of A followed by B, given crc(A), crc(B) and B's length: O(log length) work, so a large
// record checksummed once can be folded into a whole-file checksum without a second pass.
uint32_t Combine(uint32_t crc_a, uint32_t crc_b, uint64_t size_b);

// TensorFlow masks CRCs it stores next to the data they cover, because the CRC of data that itself
// contains embedded CRCs is weak.
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t Unmask(uint32_t masked) {
  const uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

// Both implementations, for tests and benchmarks; Extend() picks one.
bool HardwareAvailable();
uint32_t ExtendPortable(uint32_t crc, const void* data, size_t size);
// Only callable when HardwareAvailable(); falls back to the table elsewhere.
uint32_t ExtendHardware(uint32_t crc, const void* data, size_t size);

}  // namespace tj::crc32c
