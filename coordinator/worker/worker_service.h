// WorkerService: the gRPC face of a worker (tj.v1.Worker): Run, RunStream, CreateResource, Health.
// Where RPCs to workers are served.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "coordinator/base/coordinator_generation.h"
#include "coordinator/worker/closure_runner.h"
#include "coordinator/worker/function_context.h"
#include "coordinator/worker/function_registry.h"
#include "coordinator/worker/resource_table.h"
#include "tj/v1/worker.grpc.pb.h"

namespace tj {

struct WorkerIdentity {
  int task_index = 0;
  std::vector<std::string> ps_addresses;
};

class WorkerService final : public v1::Worker::Service {
 public:
  WorkerService(const FunctionRegistry* registry, WorkerIdentity identity);

  grpc::Status Run(grpc::ServerContext* context, const v1::RunRequest* request,
                   v1::RunResult* result) override;
  grpc::Status RunStream(grpc::ServerContext* context,
                         grpc::ServerReaderWriter<v1::ResultBatch, v1::RunBatch>* stream) override;
  grpc::Status CreateResource(grpc::ServerContext* context,
                              const v1::CreateResourceRequest* request,
                              v1::CreateResourceResponse* response) override;
  grpc::Status Health(grpc::ServerContext* context, const v1::HealthRequest* request,
                      v1::HealthResponse* response) override;

  uint64_t incarnation() const { return incarnation_; }
  const WorkerCounters& counters() const { return runner_.counters(); }

 private:
  const FunctionRegistry* registry_;
  WorkerIdentity identity_;
  const uint64_t incarnation_;
  PsClients ps_clients_;
  ResourceTable resources_;
  ClosureRunner runner_;
  // Functions run only for the newest coordinator: an older one living on must not push into
  // the parameters its successor restored.
  GenerationFence fence_;
};

}  // namespace tj
