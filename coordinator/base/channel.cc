#include "coordinator/base/channel.h"

#include <arpa/inet.h>

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

std::shared_ptr<grpc::Channel> MakeRuntimeChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1'000);
  args.SetInt(GRPC_ARG_ENABLE_RETRIES, 0);
  args.SetMaxReceiveMessageSize(256 << 20);
  args.SetMaxSendMessageSize(256 << 20);
  // Each peer gets its own subchannel, so one dead worker cannot stall the connection to another.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(ChannelTarget(address), grpc::InsecureChannelCredentials(), args);
}

}  // namespace tj
