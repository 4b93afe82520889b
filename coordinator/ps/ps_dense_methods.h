// The ParameterServer service's Pull and Push on raw gRPC buffers (dense_wire.h): values leave the
// PS from the variables' own memory and gradients are applied from the slices they arrived in.
// PsService installs them in place of the generated handlers ("streamed unary": the wire is the
// same unary call, but the handler reads and writes the messages itself, as raw buffers).
#pragma once

#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/sync_stream.h>

#include <cstdint>
#include <string>

#include "coordinator/ps/ps_counters.h"
#include "coordinator/ps/variable_store.h"

namespace tj {

using RawUnaryStream = grpc::ServerUnaryStreamer<grpc::ByteBuffer, grpc::ByteBuffer>;

// How long a push body may be, and whose it is (for the error when it is longer).
struct PushBodyBound {
  int64_t max_bytes = -1;  // the size its client announced; < 0: no bound but gRPC's
  std::string peer;        // grpc::ServerContext::peer()
  std::string who;         // "parameter server /job:ps/task:N"
};

// Read the request, answer it through `stream`, and return the call's status. Bytes served are
// added to `counters` (pulled_bytes, pushed_bytes). A push body longer than `bound` is refused
// (INVALID_ARGUMENT naming the peer and both sizes), nothing applied.
grpc::Status ServeRawPull(const VariableStore& store, RawUnaryStream& stream,
                          PsCounters& counters);
grpc::Status ServeRawPush(VariableStore& store, RawUnaryStream& stream, PsCounters& counters,
                          const PushBodyBound& bound = {});

}  // namespace tj
