// A Push request body as a PS receives it, raw (DecodePushRequest parses it in place), cut into
// gRPC slices at arbitrary boundaries (the first byte picks the slice size).
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
  absl::StatusOr<tj::DecodedPush> push = tj::DecodePushRequest(buffer);
  if (!push.ok()) return 0;
  // Whatever decodes, its chunks stay within the message.
  size_t total = 0;
  for (const tj::ChunkedTensor& delta : push->deltas) total += tj::TotalBytes(delta.data);
  for (const std::string& name : push->names) total += name.size();
  if (total > size) __builtin_trap();
  return 0;
}
