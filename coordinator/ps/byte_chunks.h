// A tensor's bytes as they arrived off the wire: consecutive pieces of gRPC slices, in order, read
// in place rather than gathered into one buffer first.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <span>
#include <vector>

#include "tj/v1/value.pb.h"

namespace tj {

using ByteChunks = std::vector<std::span<const char>>;

// A tensor whose data is still in the pieces it arrived in.
struct ChunkedTensor {
  v1::Tensor header;  // dtype and shape; its own data is empty
  ByteChunks data;
};

inline size_t TotalBytes(const ByteChunks& chunks) {
  size_t total = 0;
  for (std::span<const char> chunk : chunks) total += chunk.size();
  return total;
}

// The bytes [first, first + n) of `chunks`, as chunks (no copy). `first + n` must not exceed the
// total.
inline ByteChunks SubChunks(const ByteChunks& chunks, size_t first, size_t n) {
  ByteChunks out;
  for (std::span<const char> chunk : chunks) {
    if (n == 0) break;
    if (first >= chunk.size()) {
      first -= chunk.size();
      continue;
    }
    const size_t take = std::min(n, chunk.size() - first);
    out.push_back(chunk.subspan(first, take));
    first = 0;
    n -= take;
  }
  return out;
}

// Calls fn(first_element, bytes, n) over consecutive runs of whole, unaligned elements of
// `element_size` bytes, in order. An element split across two (or more) chunks is reassembled
// and passed as a run of one. Trailing bytes that do not make a whole element are ignored: callers
// check the total size first.
template <size_t element_size, typename Fn>
void ForEachElementRun(const ByteChunks& chunks, Fn&& fn) {
  char split[element_size];
  size_t split_bytes = 0;  // bytes of a split element gathered so far
  size_t next_element = 0;
  for (std::span<const char> chunk : chunks) {
    const char* p = chunk.data();
    size_t left = chunk.size();
    if (split_bytes > 0) {
      const size_t take = std::min(left, element_size - split_bytes);
      std::memcpy(split + split_bytes, p, take);
      split_bytes += take;
      p += take;
      left -= take;
      if (split_bytes < element_size) continue;
      fn(next_element, static_cast<const char*>(split), size_t{1});
      ++next_element;
      split_bytes = 0;
    }
    const size_t whole = left / element_size;
    if (whole > 0) {
      fn(next_element, p, whole);
      next_element += whole;
    }
    split_bytes = left - whole * element_size;
    std::memcpy(split, p + whole * element_size, split_bytes);
  }
}

}  // namespace tj
