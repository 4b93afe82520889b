#include "coordinator/worker/worker_server.h"

#include "coordinator/base/job_tls.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "coordinator/base/channel.h"

namespace tj {

absl::StatusOr<std::unique_ptr<WorkerServer>> WorkerServer::Start(const std::string& address,
                                                                  const FunctionRegistry* registry,
                                                                  WorkerIdentity identity) {
  std::unique_ptr<WorkerServer> server(new WorkerServer());
  server->service_ = std::make_unique<WorkerService>(registry, std::move(identity));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(address, RuntimeServerCredentials(), &server->port_);
  builder.RegisterService(server->service_.get());
  ConfigureRuntimeServer(builder);
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
