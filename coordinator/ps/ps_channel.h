// How workers and the coordinator connect to a parameter server: one channel per PS task, tuned so
// a dead PS is noticed within seconds and a restarted one is found again within about a second.
#pragma once

#include <grpcpp/channel.h>

#include <memory>
#include <string>

namespace tj {

// Largest message either side accepts. Dense variables easily exceed gRPC's 4 MiB default; protobuf
// itself cannot go past 2 GiB.
inline constexpr int kPsMaxMessageBytes = 1 << 30;

// An insecure channel to `address` ("host:port") with keepalive and a short reconnect backoff.
std::shared_ptr<grpc::Channel> MakePsChannel(const std::string& address);

}  // namespace tj
