#include "coordinator/worker/worker_server.h"

#include <chrono>

#include "absl/strings/str_cat.h"

namespace tj {

absl::StatusOr<std::unique_ptr<WorkerServer>> WorkerServer::Start(const std::string& address,
                                                                  const FunctionRegistry* registry,
                                                                  WorkerIdentity identity) {
  std::unique_ptr<WorkerServer> server(new WorkerServer());
  server->service_ = std::make_unique<WorkerService>(registry, std::move(identity));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &server->port_);
  builder.RegisterService(server->service_.get());
  builder.SetMaxReceiveMessageSize(256 << 20);
  builder.SetMaxSendMessageSize(256 << 20);
  // Coordinators ping idle streams to detect dead peers; allow it.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->port_ == 0) {
    return absl::UnavailableError(absl::StrCat("worker could not listen on ", address,
                                               " (address in use or not local?)"));
  }
  return server;
}

WorkerServer::~WorkerServer() { Shutdown(absl::ZeroDuration()); }

void WorkerServer::Shutdown(absl::Duration grace) {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(grace));
  server_->Wait();
  server_.reset();
}

void WorkerServer::Wait() {
  if (server_ != nullptr) server_->Wait();
}

}  // namespace tj
