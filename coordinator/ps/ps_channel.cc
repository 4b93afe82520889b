#include "coordinator/ps/ps_channel.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

namespace tj {

std::shared_ptr<grpc::Channel> MakePsChannel(const std::string& address) {
  grpc::ChannelArguments args;
  // Keepalive finds a PS whose host vanished (no RST ever arrives) between calls, not only during
  // one.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, kPsKeepaliveTimeMs);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // By default gRPC stops pinging after two pings without data; keep pinging an idle PS.
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  // A restarted PS comes back on the same address; the default backoff (1 s growing to 120 s) would
  // keep workers away from it for minutes.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1'000);
  args.SetMaxReceiveMessageSize(kPsMaxMessageBytes);
  args.SetMaxSendMessageSize(kPsMaxMessageBytes);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

}  // namespace tj
