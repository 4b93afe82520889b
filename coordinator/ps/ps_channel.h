// How workers and the coordinator connect to a parameter server: one channel per PS task, tuned so
// a dead PS is noticed within seconds and a restarted one is found again within about a second.
#pragma once

#include <grpcpp/channel.h>

#include <memory>
#include <string>

namespace tj {

// Client keepalive ping interval; the PS server must accept pings at least this often (it allows
// half of it) or it answers with GOAWAY "too_many_pings".
inline constexpr int kPsKeepaliveTimeMs = 10'000;

// Largest message either side accepts. Dense variables easily exceed gRPC's 4 MiB default; protobuf
// itself cannot go past 2 GiB.
inline constexpr int kPsMaxMessageBytes = 1 << 30;

// An insecure channel to `address` ("host:port") with keepalive and a short reconnect backoff.
std::shared_ptr<grpc::Channel> MakePsChannel(const std::string& address);

}  // namespace tj
