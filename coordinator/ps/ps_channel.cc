#include "coordinator/ps/ps_channel.h"

#include "coordinator/base/channel.h"

namespace tj {

std::shared_ptr<grpc::Channel> MakePsChannel(const std::string& address) {
  return MakeRuntimeChannel(address, kPsMaxMessageBytes);
}

}  // namespace tj
