#include "coordinator/worker/worker_service.h"

#include <random>

#include "absl/strings/str_cat.h"
#include "coordinator/base/rpc_authorization.h"
#include "coordinator/base/wire_status.h"
#include "coordinator/worker/run_stream_session.h"

namespace tj {
namespace {
uint64_t RandomIncarnation() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ 1;  // never 0: 0 means "unknown"
}
}  // namespace

WorkerService::WorkerService(const FunctionRegistry* registry, WorkerIdentity identity)
    : registry_(registry),
      identity_(std::move(identity)),
      incarnation_(RandomIncarnation()),
      ps_clients_(identity_.ps_addresses),
      runner_(registry_, &resources_, &ps_clients_, identity_.task_index) {}

grpc::Status WorkerService::Run(grpc::ServerContext* context, const v1::RunRequest* request,
                                v1::RunResult* result) {
  TJ_AUTHORIZE(context, Rpc::kRun);
  if (grpc::Status fenced = fence_.Admit(*context, "Run"); !fenced.ok()) return fenced;
  CancellationFlag flag;
  runner_.Run(*request, &flag, result);
  return grpc::Status::OK;
}

grpc::Status WorkerService::RunStream(
    grpc::ServerContext* context, grpc::ServerReaderWriter<v1::ResultBatch, v1::RunBatch>* stream) {
  TJ_AUTHORIZE(context, Rpc::kRunStream);
  if (grpc::Status fenced = fence_.Admit(*context, "RunStream"); !fenced.ok()) return fenced;
  // Admit() parsed the header already: it is valid here.
  RunStreamSession session(&runner_, stream, &fence_, CallGeneration(*context).value_or(0));
  return session.Serve();
}

grpc::Status WorkerService::CreateResource(grpc::ServerContext* context,
                                           const v1::CreateResourceRequest* request,
                                           v1::CreateResourceResponse* response) {
  TJ_AUTHORIZE(context, Rpc::kCreateResource);
  if (grpc::Status fenced = fence_.Admit(*context, "CreateResource"); !fenced.ok()) return fenced;
  auto description = runner_.CreateResource(*request);
  if (description.ok()) {
    *response->mutable_description() = std::move(*description);
  } else {
    ToProto(description.status(), response->mutable_status());
  }
  return grpc::Status::OK;
}

grpc::Status WorkerService::Health(grpc::ServerContext* context, const v1::HealthRequest* request,
                                   v1::HealthResponse* response) {
  TJ_AUTHORIZE(context, Rpc::kWorkerHealth);
  response->set_task(absl::StrCat("/job:worker/task:", identity_.task_index));
  response->set_incarnation(incarnation_);
  for (const auto& name : registry_->function_names()) response->add_functions(name);
  for (const auto& name : registry_->resource_function_names()) {
    response->add_resource_functions(name);
  }
  return grpc::Status::OK;
}

}  // namespace tj
