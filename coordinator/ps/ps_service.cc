#include "coordinator/ps/ps_service.h"

#include <optional>

#include "coordinator/base/job_token.h"
#include "absl/random/random.h"
#include "coordinator/base/wire_status.h"
#include "coordinator/ps/shard_file.h"

namespace tj {
namespace {

uint64_t NewIncarnation() {
  absl::BitGen gen;
  uint64_t incarnation = 0;
  // Zero is what an unset proto field reads as; never hand it out.
  while (incarnation == 0) incarnation = absl::Uniform<uint64_t>(gen);
  return incarnation;
}

// Runs `handler` unless the service is draining. UNAVAILABLE tells clients the PS itself is gone,
// not that the request was wrong.
template <typename Handler>
grpc::Status IfAdmitted(CallDrain& drain, Handler&& handler) {
  std::optional<CallDrain::Admission> admission = drain.Admit();
  if (!admission.has_value()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "parameter server is shutting down");
  }
  return handler();
}

}  // namespace

PsService::PsService(int ps_task, VariableStore& store)
    : ps_task_(ps_task), incarnation_(NewIncarnation()), store_(store) {}

grpc::Status PsService::Health(grpc::ServerContext* context,
                               const v1::PsHealthRequest* /*request*/,
                               v1::PsHealthResponse* response) {
  TJ_REQUIRE_JOB_TOKEN(context);
  return IfAdmitted(drain_, [&] {
    response->set_ps_task(ps_task_);
    response->set_incarnation(incarnation_);
    response->set_num_variables(store_.num_variables());
    response->set_num_tables(store_.num_tables());
    return grpc::Status::OK;
  });
}

grpc::Status PsService::CreateVariables(grpc::ServerContext* context,
                                        const v1::CreateVariablesRequest* request,
                                        v1::CreateVariablesResponse* /*response*/) {
  TJ_REQUIRE_JOB_TOKEN(context);
  return IfAdmitted(drain_, [&] { return ToGrpc(store_.Create(*request)); });
}

grpc::Status PsService::Pull(grpc::ServerContext* context, const v1::PullRequest* request,
                             v1::PullResponse* response) {
  TJ_REQUIRE_JOB_TOKEN(context);
  return IfAdmitted(drain_, [&] { return ToGrpc(store_.Pull(*request, *response)); });
}

grpc::Status PsService::Push(grpc::ServerContext* context, const v1::PushRequest* request,
                             v1::PushResponse* /*response*/) {
  TJ_REQUIRE_JOB_TOKEN(context);
  return IfAdmitted(drain_, [&] { return ToGrpc(store_.Push(*request)); });
}

grpc::Status PsService::Lookup(grpc::ServerContext* context, const v1::LookupRequest* request,
                               v1::LookupResponse* response) {
  TJ_REQUIRE_JOB_TOKEN(context);
  return IfAdmitted(drain_, [&] { return ToGrpc(store_.Lookup(*request, *response)); });
}

grpc::Status PsService::PushSparse(grpc::ServerContext* context,
                                   const v1::PushSparseRequest* request,
                                   v1::PushSparseResponse* /*response*/) {
  TJ_REQUIRE_JOB_TOKEN(context);
  return IfAdmitted(drain_, [&] { return ToGrpc(store_.PushSparse(*request)); });
}

grpc::Status PsService::SaveShard(grpc::ServerContext* context,
                                  const v1::SaveShardRequest* request,
                                  v1::SaveShardResponse* response) {
  TJ_REQUIRE_JOB_TOKEN(context);
  return IfAdmitted(drain_, [&] {
    absl::StatusOr<v1::SaveShardResponse> saved = SaveShardFile(store_, request->path());
    if (saved.ok()) *response = *std::move(saved);
    return ToGrpc(saved.status());
  });
}

grpc::Status PsService::RestoreShard(grpc::ServerContext* context,
                                     const v1::RestoreShardRequest* request,
                                     v1::RestoreShardResponse* response) {
  TJ_REQUIRE_JOB_TOKEN(context);
  return IfAdmitted(drain_, [&] {
    absl::StatusOr<v1::RestoreShardResponse> restored = RestoreShardFile(store_, request->path());
    if (restored.ok()) *response = *std::move(restored);
    return ToGrpc(restored.status());
  });
}

}  // namespace tj
