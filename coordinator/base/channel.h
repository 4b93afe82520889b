// The gRPC channel settings every runtime connection uses: keepalive pings so a dead peer is noticed
// even on an idle connection, and a short reconnect backoff so a restarted peer is found quickly.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

namespace tj {

// The gRPC target for "host:port": IP literals use the ipv4:/ipv6: schemes, names go through DNS.
std::string ChannelTarget(const std::string& address);

std::shared_ptr<grpc::Channel> MakeRuntimeChannel(const std::string& address);

}  // namespace tj
