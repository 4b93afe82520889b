#include "coordinator/base/channel.h"

#include <arpa/inet.h>

#include "coordinator/base/coordinator_generation.h"
#include "coordinator/base/job_tls.h"
#include "coordinator/base/job_token.h"

namespace tj {

std::string ChannelTarget(const std::string& address) {
  // An IP literal skips the DNS resolver, whose re-resolution after a lost connection is rate
  // limited and delayed reconnecting to a restarted peer by seconds.
  in_addr v4;
  const std::string host = address.substr(0, address.rfind(':'));
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return "ipv4:" + address;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') return "ipv6:" + address;
  return address;
}

std::shared_ptr<grpc::Channel> MakeRuntimeChannel(const std::string& address,
                                                  int max_message_bytes) {
  grpc::ChannelArguments args;
  // Keepalive finds a peer whose host vanished (no RST ever arrives), also between calls.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveTimeMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // By default gRPC stops pinging after two pings without data; keep pinging an idle peer.
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // A restarted peer comes back on the same address; the default backoff (1 s growing to 120 s)
  // would keep us away from it for minutes.
  // Not GRPC_ARG_MIN_RECONNECT_BACKOFF_MS: gRPC also uses it as the minimum connection timeout, and at
  // 50 ms a loaded 2-core machine abandoned handshakes with a restarted peer for seconds.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1'000);
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  args.SetMaxReceiveMessageSize(max_message_bytes);
  args.SetMaxSendMessageSize(max_message_bytes);
  // Each peer gets its own subchannel, so one dead worker cannot stall the connection to another.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // Every call carries the process's credential (job_token.h; none when it has none) and, from a
  // coordinator, its generation (coordinator_generation.h). TLS when the job has certificates
  // (job_tls.h).
  auto interceptors = JobTokenInterceptors();
  for (auto& generation : CoordinatorGenerationInterceptors()) {
    interceptors.push_back(std::move(generation));
  }
  return grpc::experimental::CreateCustomChannelWithInterceptors(
      ChannelTarget(address), RuntimeChannelCredentials(), args, std::move(interceptors));
}

void ConfigureRuntimeServer(grpc::ServerBuilder& builder, int max_message_bytes) {
  builder.SetMaxReceiveMessageSize(max_message_bytes);
  builder.SetMaxSendMessageSize(max_message_bytes);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             kKeepaliveTimeMs / 2);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
}

}  // namespace tj
