#include "coordinator/coordination/coordination_service.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "coordinator/base/rpc_authorization.h"
#include "coordinator/base/wire_status.h"

namespace tj {
namespace {

TaskKey NameOf(const v1::TaskId& task) { return MakeTaskKey(task.type(), task.index()); }

// Waits are capped so a caller's bad timeout cannot pin a server thread for days.
absl::Duration WaitOf(int64_t timeout_ms) {
  return absl::Milliseconds(std::clamp<int64_t>(timeout_ms, 0, 3'600'000));
}

}  // namespace

grpc::Status CoordinationService::RegisterTask(grpc::ServerContext* context,
                                               const v1::RegisterTaskRequest* request,
                                               v1::RegisterTaskResponse*) {
  TJ_AUTHORIZE(context, Rpc::kRegisterTask);
  const bool is_new = state_->RegisterTask(NameOf(request->task()), request->incarnation());
  if (is_new && registration_sink_) registration_sink_(*request);
  return grpc::Status::OK;
}

grpc::Status CoordinationService::Heartbeat(grpc::ServerContext* context,
                                            const v1::HeartbeatRequest* request,
                                            v1::HeartbeatResponse*) {
  TJ_AUTHORIZE(context, Rpc::kHeartbeat);
  return ToGrpc(state_->Heartbeat(NameOf(request->task()), request->incarnation()));
}

grpc::Status CoordinationService::KeyValueSet(grpc::ServerContext* context,
                                              const v1::KeyValueSetRequest* request,
                                              v1::KeyValueSetResponse*) {
  TJ_AUTHORIZE(context, Rpc::kKeyValueSet);
  return ToGrpc(state_->Set(request->key(), request->value(), request->allow_overwrite()));
}

grpc::Status CoordinationService::KeyValueGet(grpc::ServerContext* context,
                                              const v1::KeyValueGetRequest* request,
                                              v1::KeyValueGetResponse* response) {
  TJ_AUTHORIZE(context, Rpc::kKeyValueGet);
  auto value = state_->Get(request->key(), WaitOf(request->timeout_ms()));
  if (!value.ok()) return ToGrpc(value.status());
  response->set_value(*std::move(value));
  return grpc::Status::OK;
}

grpc::Status CoordinationService::KeyValueDelete(grpc::ServerContext* context,
                                                 const v1::KeyValueDeleteRequest* request,
                                                 v1::KeyValueDeleteResponse*) {
  TJ_AUTHORIZE(context, Rpc::kKeyValueDelete);
  state_->Delete(request->key());
  return grpc::Status::OK;
}

grpc::Status CoordinationService::KeyValueList(grpc::ServerContext* context,
                                               const v1::KeyValueListRequest* request,
                                               v1::KeyValueListResponse* response) {
  TJ_AUTHORIZE(context, Rpc::kKeyValueList);
  for (auto& [key, value] : state_->List(request->prefix())) {
    v1::KeyValueEntry* entry = response->add_entries();
    entry->set_key(key);
    entry->set_value(value);
  }
  return grpc::Status::OK;
}

grpc::Status CoordinationService::Barrier(grpc::ServerContext* context,
                                          const v1::BarrierRequest* request, v1::BarrierResponse*) {
  TJ_AUTHORIZE(context, Rpc::kBarrier);
  std::set<TaskKey> participants;
  for (const auto& task : request->participants()) participants.insert(NameOf(task));
  return ToGrpc(state_->Barrier(request->barrier_id(), NameOf(request->task()), participants,
                                WaitOf(request->timeout_ms())));
}

grpc::Status CoordinationService::GetTaskStates(grpc::ServerContext* context,
                                                const v1::GetTaskStatesRequest* request,
                                                v1::GetTaskStatesResponse* response) {
  TJ_AUTHORIZE(context, Rpc::kGetTaskStates);
  std::vector<TaskKey> tasks;
  for (const auto& task : request->tasks()) tasks.push_back(NameOf(task));
  for (const TaskStateView& view : state_->TaskStates(tasks)) {
    v1::TaskState* state = response->add_states();
    const size_t colon = view.task.rfind(':');
    state->mutable_task()->set_type(view.task.substr(0, colon));
    state->mutable_task()->set_index(std::stoi(view.task.substr(colon + 1)));
    state->set_healthy(view.healthy);
    ToProto(view.error, state->mutable_error());
  }
  return grpc::Status::OK;
}

grpc::Status CoordinationService::PreemptionNotice(grpc::ServerContext* context,
                                                   const v1::PreemptionNoticeRequest* request,
                                                   v1::PreemptionNoticeResponse* response) {
  CallerIdentity caller;
  if (grpc::Status authorized = AuthorizeCall(*context, Rpc::kPreemptionNotice, &caller);
      !authorized.ok()) {
    return authorized;
  }
  // A worker or PS announces its own kind's preemption (its SIGTERM, task_lifetime.h), never the
  // coordinator's nor another kind's.
  if (caller.role == JobRole::kWorker || caller.role == JobRole::kPs) {
    const absl::string_view own = JobRoleName(*caller.role);
    if (request->task().type() != own) {
      return grpc::Status(
          grpc::StatusCode::PERMISSION_DENIED,
          absl::StrCat("role ", own,
                       " may not send tj.v1.Coordination/"
                       "PreemptionNotice about task ",
                       request->task().type(), ":", request->task().index(), " (only about a ", own,
                       " task; the control role sends the others)"));
    }
  }
  if (!sink_) {
    response->set_accepted(false);
    response->set_decision("this coordinator has no preemption handler (not training yet)");
    return grpc::Status::OK;
  }
  *response = sink_(*request);
  return grpc::Status::OK;
}

}  // namespace tj
