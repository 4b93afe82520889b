#include "coordinator/ps/ps_dense_methods.h"

#include <grpcpp/support/proto_buffer_reader.h>

#include <string>
#include <vector>

#include "coordinator/base/wire_status.h"
#include "absl/strings/str_cat.h"
#include "coordinator/ps/dense_wire.h"
#include "coordinator/ps/push_window.h"

namespace tj {

grpc::Status ServeRawPull(const VariableStore& store, RawUnaryStream& stream,
                          PsCounters& counters) {
  grpc::ByteBuffer request_bytes;
  if (!stream.Read(&request_bytes)) {
    return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away before its request");
  }
  // The request is a handful of names: parsed by protobuf as usual.
  v1::PullRequest request;
  grpc::ProtoBufferReader reader(&request_bytes);
  if (!request.ParseFromZeroCopyStream(&reader)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "malformed PullRequest");
  }
  absl::StatusOr<std::vector<PulledValue>> values =
      store.PinForPull(std::vector<std::string>(request.names().begin(), request.names().end()));
  if (!values.ok()) return ToGrpc(values.status());
  const grpc::ByteBuffer answer = EncodePullResponse(*std::move(values));
  PsCounters::Add(counters.pulled_bytes, static_cast<int64_t>(answer.Length()));
  // A failed write means the client is gone; the status below is then never seen by anyone.
  (void)stream.Write(answer);
  return grpc::Status::OK;
}

grpc::Status ServeRawPush(VariableStore& store, RawUnaryStream& stream, PsCounters& counters,
                          const PushBodyBound& bound) {
  grpc::ByteBuffer request_bytes;
  if (!stream.Read(&request_bytes)) {
    return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away before its request");
  }
  // The window admitted the announced size only: a longer body would hold memory it never counted.
  if (const auto body = static_cast<int64_t>(request_bytes.Length());
      bound.max_bytes >= 0 && body > bound.max_bytes) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat(bound.who, ": a push from ", bound.peer, " announced ", bound.max_bytes,
                     " bytes (", std::string(kPushBytesHeader), ") but its body is ", body,
                     " bytes; refused, nothing was applied"));
  }
  absl::StatusOr<DecodedPush> push = DecodePushRequest(request_bytes);
  if (!push.ok()) return ToGrpc(push.status());
  if (absl::Status applied = store.Push(push->names, push->deltas); !applied.ok()) {
    return ToGrpc(applied);
  }
  PsCounters::Add(counters.pushed_bytes, static_cast<int64_t>(request_bytes.Length()));
  grpc::Slice empty;
  (void)stream.Write(grpc::ByteBuffer(&empty, 1));
  return grpc::Status::OK;
}

}  // namespace tj
