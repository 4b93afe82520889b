// A dense push sent as PsClient sends it but with any kPushBytesHeader (or none): what a client
// that announces the wrong size, or none, does to a PS.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/impl/rpc_method.h>

#include <chrono>
#include <optional>
#include <string>

#include "coordinator/ps/dense_wire.h"
#include "coordinator/ps/push_window.h"

namespace tj::testing {

inline grpc::Status RawPush(const std::shared_ptr<grpc::Channel>& channel,
                            const grpc::ByteBuffer& request,
                            const std::optional<std::string>& announcement) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  if (announcement.has_value()) context.AddMetadata(std::string(kPushBytesHeader), *announcement);
  const grpc::internal::RpcMethod method(kPsPushMethod, grpc::internal::RpcMethod::NORMAL_RPC,
                                         channel);
  grpc::ByteBuffer response;
  return grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      channel.get(), method, &context, request, &response);
}

}  // namespace tj::testing
