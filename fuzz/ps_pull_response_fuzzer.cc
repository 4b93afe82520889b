// A Pull response as a worker's PsClient receives it from a PS, decoded into reused tensors (as a
// worker pulling the same variables again does), cut into slices at arbitrary boundaries.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "coordinator/ps/dense_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t slice_size = 1 + data[0] % 32;
  std::vector<grpc::Slice> slices;
  for (size_t at = 1; at < size; at += slice_size) {
    slices.emplace_back(data + at, std::min(slice_size, size - at));
  }
  if (slices.empty()) slices.emplace_back();
  const grpc::ByteBuffer buffer(slices.data(), slices.size());
  // Decoded twice into the same vector: the second pass reuses what the first allocated.
  std::vector<tj::v1::Tensor> values;
  for (int pass = 0; pass < 2; ++pass) {
    if (!tj::DecodePullResponse(buffer, values).ok()) return 0;
    size_t total = 0;
    for (const tj::v1::Tensor& value : values) total += value.data().size();
    if (total > size) __builtin_trap();
  }
  return 0;
}
