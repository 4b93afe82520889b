// WorkerServer: a running Worker service on an address, for the worker binary and in-process tests.
#pragma once

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/worker/worker_service.h"

namespace tj {

class WorkerServer {
 public:
  // `address` may use port 0; port() tells the one chosen.
  static absl::StatusOr<std::unique_ptr<WorkerServer>> Start(const std::string& address,
                                                             const FunctionRegistry* registry,
                                                             WorkerIdentity identity);
  ~WorkerServer();

  int port() const { return port_; }
  uint64_t incarnation() const { return service_->incarnation(); }
  const WorkerCounters& counters() const { return service_->counters(); }
  void Shutdown(absl::Duration grace = absl::Seconds(1));
  void Wait();

 private:
  WorkerServer() = default;
  std::unique_ptr<WorkerService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace tj
