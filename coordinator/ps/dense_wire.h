// Pull responses and push requests encoded and decoded straight between tensor memory and gRPC
// slices, without staging 64 MiB of floats in protobuf strings (each such string was a fresh
// allocation and a full copy on both sides). The bytes on the wire are exactly a v1::PullResponse
// and a v1::PushRequest, so a client or server using the generated protobuf code talks to these
// unchanged (ShardedPsClient still does).
#pragma once

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/ps/byte_chunks.h"
#include "coordinator/ps/dense_variable.h"
#include "tj/v1/ps.pb.h"

namespace tj {

// The full method names, as the generated code spells them (checked by dense_wire_test).
inline constexpr char kPsPullMethod[] = "/tj.v1.ParameterServer/Pull";
inline constexpr char kPsPushMethod[] = "/tj.v1.ParameterServer/Push";

// Tensors at least this large travel as slices of their own memory; smaller ones are copied into
// the message's framing, which is cheaper than a slice of their own.
inline constexpr size_t kZeroCopyMinBytes = size_t{64} << 10;

// Bounds on what a decoded message may hold, whatever its size: a real pull or push names each
// variable of one PS shard once (thousands at most), and a tensor has a handful of dimensions.
// Beyond them the message is refused as malformed instead of costing many times its size in
// objects.
inline constexpr size_t kMaxWireEntries = size_t{1} << 18;
inline constexpr int kMaxWireTensorRank = 64;

// A PullResponse whose large values are sent from the pinned buffers themselves.
grpc::ByteBuffer EncodePullResponse(std::vector<PulledValue> values);

// Parses a PullResponse into `values`, reusing the capacity of the tensors already there (a caller
// that pulls the same variables again receives into the same memory). InvalidArgument naming
// what is malformed.
absl::Status DecodePullResponse(const grpc::ByteBuffer& buffer, std::vector<v1::Tensor>& values);

// A PushRequest whose large deltas are sent from their own memory: `deltas` are kept alive by the
// returned buffer until gRPC has written them.
grpc::ByteBuffer EncodePushRequest(const std::vector<std::string>& names,
                                   std::vector<v1::Tensor> deltas);

// Where one pulled value goes: exactly `num_bytes` bytes of float32 data at `data` (a slice of a
// larger variable's buffer, at its offset).
struct PullTarget {
  char* data = nullptr;
  size_t num_bytes = 0;
};

// Parses a PullResponse whose values are copied straight from gRPC's slices into `targets`, one
// per value in order: no tensor is built. InvalidArgument when malformed, when a value is not
// float32 or not of its target's size, or when the count differs.
absl::Status DecodePullResponseInto(const grpc::ByteBuffer& buffer,
                                    std::span<const PullTarget> targets);

// The same parse, handing each value's bytes to `receive(index, pieces)` in the pieces of gRPC's
// slices they arrived in (valid during the call) instead of copying them: a streamed step copies
// and uses them a few rows at a time, while they are in cache. `sizes[i]` is value i's expected
// byte count; a value of another size or dtype is refused before `receive` sees it.
absl::Status DecodePullResponseWith(
    const grpc::ByteBuffer& buffer, std::span<const size_t> sizes,
    const std::function<void(size_t index, const ByteChunks& pieces)>& receive);

// One delta of a push as a view: `num_bytes` float32 bytes at `data`, kept valid by the owner
// passed to EncodePushRequest.
struct DeltaView {
  std::vector<int64_t> shape;
  const char* data = nullptr;
  size_t num_bytes = 0;
};

// A PushRequest whose deltas are sent from views into memory `owner` keeps alive (a slice of a
// larger gradient): gRPC holds a reference to `owner` until it has written them.
grpc::ByteBuffer EncodePushRequest(const std::vector<std::string>& names,
                                   std::span<const DeltaView> deltas,
                                   std::shared_ptr<const void> owner);

struct DecodedPush {
  std::vector<grpc::Slice> slices;  // own the memory `deltas` point into
  std::vector<std::string> names;
  std::vector<ChunkedTensor> deltas;
};

// Parses a PushRequest without copying its deltas. InvalidArgument naming what is malformed. Every
// length is checked against the bytes that arrived before anything is allocated for it.
absl::StatusOr<DecodedPush> DecodePushRequest(const grpc::ByteBuffer& buffer);

}  // namespace tj
