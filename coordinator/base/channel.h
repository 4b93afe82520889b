// The gRPC channel settings every runtime connection uses: keepalive pings so a dead peer is noticed
// even on an idle connection, and a short reconnect backoff so a restarted peer is found quickly.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>
#include <grpcpp/server_builder.h>

namespace tj {

// Peers ping every kKeepaliveTimeMs, also while idle; servers must accept that (see
// ConfigureRuntimeServer) instead of closing the connection with "too_many_pings".
inline constexpr int kKeepaliveTimeMs = 10'000;
inline constexpr int kDefaultMaxMessageBytes = 256 << 20;

// The server side of the same settings: accept idle keepalive pings, size limits, and own the port
// (no SO_REUSEPORT, so a second server on the same port fails instead of silently sharing it).
void ConfigureRuntimeServer(grpc::ServerBuilder& builder,
                            int max_message_bytes = kDefaultMaxMessageBytes);

// The gRPC target for "host:port": IP literals use the ipv4:/ipv6: schemes, names go through DNS.
std::string ChannelTarget(const std::string& address);

std::shared_ptr<grpc::Channel> MakeRuntimeChannel(const std::string& address,
                                                  int max_message_bytes = kDefaultMaxMessageBytes);

}  // namespace tj
