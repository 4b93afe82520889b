#include "coordinator/checkpoint/crc32c.h"

#include <array>
#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace tj::crc32c {
namespace {

// The reflected Castagnoli polynomial.
constexpr uint32_t kPolynomial = 0x82f63b78u;

// Slicing-by-8 tables: table[k][b] is the CRC of byte b followed by k zero bytes, so eight input
// bytes are folded per step instead of one.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kPolynomial : 0u);
    t[0][b] = crc;
  }
  for (uint32_t b = 0; b < 256; ++b) {
    for (size_t k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xffu];
  }
  return t;
}

constexpr Tables kTables = MakeTables();

uint64_t LoadLittleEndian64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

#if defined(__x86_64__)
// The crc32 instruction has a latency of 3 cycles and a throughput of 1: one dependent chain uses a
// third of it. Large inputs are therefore checksummed as three interleaved lanes of kLane bytes,
// whose CRCs are then joined by shifting the first two past the bytes that follow them.
constexpr size_t kLane = 4096;

// A raw (not inverted) CRC state advanced past `zeros` zero bytes: a linear map of the state, kept
// as four byte-indexed tables.
class ZeroShift {
 public:
  explicit ZeroShift(size_t zeros) {
    uint32_t basis[32];
    for (int bit = 0; bit < 32; ++bit) basis[bit] = AdvanceOverZeros(uint32_t{1} << bit, zeros);
    for (int k = 0; k < 4; ++k) {
      for (uint32_t b = 0; b < 256; ++b) {
        uint32_t v = 0;
        for (int j = 0; j < 8; ++j) {
          if (b & (1u << j)) v ^= basis[8 * k + j];
        }
        table_[k][b] = v;
      }
    }
  }
  uint32_t operator()(uint32_t state) const {
    return table_[0][state & 0xffu] ^ table_[1][(state >> 8) & 0xffu] ^
           table_[2][(state >> 16) & 0xffu] ^ table_[3][state >> 24];
  }

 private:
  __attribute__((target("sse4.2"))) static uint32_t AdvanceOverZeros(uint32_t state,
                                                                    size_t zeros) {
    uint64_t c = state;
    for (size_t i = 0; i < zeros; i += 8) c = _mm_crc32_u64(c, 0);
    return static_cast<uint32_t>(c);
  }
  uint32_t table_[4][256];
};

__attribute__((target("sse4.2"))) uint32_t ExtendSse42(uint32_t crc, const unsigned char* p,
                                                       size_t n) {
  uint64_t c = ~crc;
  for (; n > 0 && (reinterpret_cast<uintptr_t>(p) & 7u) != 0; --n) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
  }
  if (n >= 3 * kLane) {
    static const ZeroShift* const shift_one = new ZeroShift(kLane);
    static const ZeroShift* const shift_two = new ZeroShift(2 * kLane);
    for (; n >= 3 * kLane; n -= 3 * kLane, p += 3 * kLane) {
      uint64_t c0 = c, c1 = 0, c2 = 0;
      for (size_t i = 0; i < kLane; i += 8) {
        uint64_t v0, v1, v2;
        std::memcpy(&v0, p + i, 8);
        std::memcpy(&v1, p + kLane + i, 8);
        std::memcpy(&v2, p + 2 * kLane + i, 8);
        c0 = _mm_crc32_u64(c0, v0);
        c1 = _mm_crc32_u64(c1, v1);
        c2 = _mm_crc32_u64(c2, v2);
      }
      // crc(A B C) from state s: shift(crc_s(A), |B C|) ^ shift(crc_0(B), |C|) ^ crc_0(C).
      c = (*shift_two)(static_cast<uint32_t>(c0)) ^ (*shift_one)(static_cast<uint32_t>(c1)) ^
          static_cast<uint32_t>(c2);
    }
  }
  for (; n >= 8; n -= 8, p += 8) {
    uint64_t v;
    std::memcpy(&v, p, sizeof(v));
    c = _mm_crc32_u64(c, v);
  }
  for (; n > 0; --n) c = _mm_crc32_u8(static_cast<uint32_t>(c), *p++);
  return ~static_cast<uint32_t>(c);
}
#endif

using ExtendFn = uint32_t (*)(uint32_t, const void*, size_t);

ExtendFn ChooseExtend() { return HardwareAvailable() ? &ExtendHardware : &ExtendPortable; }

// A 32x32 matrix over GF(2) (columns stored as words) times a vector: zlib's crc32_combine method.
uint32_t MatrixTimes(const uint32_t* matrix, uint32_t vec) {
  uint32_t sum = 0;
  for (; vec != 0; vec >>= 1, ++matrix) {
    if (vec & 1u) sum ^= *matrix;
  }
  return sum;
}

void MatrixSquare(uint32_t* square, const uint32_t* matrix) {
  for (int n = 0; n < 32; ++n) square[n] = MatrixTimes(matrix, matrix[n]);
}

}  // namespace

bool HardwareAvailable() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("sse4.2");
#else
  return false;
#endif
}

uint32_t ExtendPortable(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  for (; size >= 8; size -= 8, p += 8) {
    const uint64_t v = LoadLittleEndian64(p) ^ c;
    c = kTables[7][v & 0xffu] ^ kTables[6][(v >> 8) & 0xffu] ^ kTables[5][(v >> 16) & 0xffu] ^
        kTables[4][(v >> 24) & 0xffu] ^ kTables[3][(v >> 32) & 0xffu] ^
        kTables[2][(v >> 40) & 0xffu] ^ kTables[1][(v >> 48) & 0xffu] ^ kTables[0][v >> 56];
  }
  for (; size > 0; --size) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xffu];
  return ~c;
}

uint32_t ExtendHardware(uint32_t crc, const void* data, size_t size) {
#if defined(__x86_64__)
  if (HardwareAvailable()) return ExtendSse42(crc, static_cast<const unsigned char*>(data), size);
#endif
  return ExtendPortable(crc, data, size);
}

uint32_t Extend(uint32_t crc, const void* data, size_t size) {
  static const ExtendFn extend = ChooseExtend();
  return extend(crc, data, size);
}

uint32_t Combine(uint32_t crc_a, uint32_t crc_b, uint64_t size_b) {
  if (size_b == 0) return crc_a;
  uint32_t even[32];     // operator for an even power of two zero bits
  uint32_t odd[32];      // operator for an odd power of two zero bits
  odd[0] = kPolynomial;  // one zero bit
  uint32_t row = 1;
  for (int n = 1; n < 32; ++n, row <<= 1) odd[n] = row;
  MatrixSquare(even, odd);  // two zero bits
  MatrixSquare(odd, even);  // four zero bits
  // Each round squares the operator (doubling the zeros it appends) and applies it for every set
  // bit of size_b, so crc_a is advanced past size_b zero bytes.
  do {
    MatrixSquare(even, odd);
    if (size_b & 1u) crc_a = MatrixTimes(even, crc_a);
    size_b >>= 1;
    if (size_b == 0) break;
    MatrixSquare(odd, even);
    if (size_b & 1u) crc_a = MatrixTimes(odd, crc_a);
    size_b >>= 1;
  } while (size_b != 0);
  return crc_a ^ crc_b;
}

}  // namespace tj::crc32c
