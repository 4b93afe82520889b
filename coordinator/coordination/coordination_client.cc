#include "coordinator/coordination/coordination_client.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "coordinator/base/channel.h"
#include "coordinator/base/wire_status.h"

namespace tj {

v1::TaskId MakeTaskId(const std::string& type, int index) {
  v1::TaskId task;
  task.set_type(type);
  task.set_index(index);
  return task;
}

CoordinationClient::CoordinationClient(std::string address, absl::Duration rpc_timeout)
    : address_(std::move(address)),
      rpc_timeout_(rpc_timeout),
      stub_(v1::Coordination::NewStub(MakeRuntimeChannel(address_))) {}

absl::Status CoordinationClient::Translate(const grpc::Status& status, const char* method) const {
  if (status.ok()) return absl::OkStatus();
  absl::Status translated = FromGrpc(status);
  return absl::Status(translated.code(), absl::StrCat("coordination service at ", address_, ", ",
                                                      method, ": ", translated.message()));
}

void CoordinationClient::SetDeadline(grpc::ClientContext& context, absl::Duration extra) const {
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoNanoseconds(rpc_timeout_ + extra));
}

absl::Status CoordinationClient::RegisterTask(const v1::TaskId& task, uint64_t incarnation,
                                              const std::string& address) const {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::RegisterTaskRequest request;
  *request.mutable_task() = task;
  request.set_incarnation(incarnation);
  request.set_address(address);
  v1::RegisterTaskResponse response;
  return Translate(stub_->RegisterTask(&context, request, &response), "RegisterTask");
}

absl::Status CoordinationClient::Heartbeat(const v1::TaskId& task, uint64_t incarnation) const {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::HeartbeatRequest request;
  *request.mutable_task() = task;
  request.set_incarnation(incarnation);
  v1::HeartbeatResponse response;
  return Translate(stub_->Heartbeat(&context, request, &response), "Heartbeat");
}

absl::Status CoordinationClient::Set(const std::string& key, const std::string& value,
                                     bool allow_overwrite) const {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::KeyValueSetRequest request;
  request.set_key(key);
  request.set_value(value);
  request.set_allow_overwrite(allow_overwrite);
  v1::KeyValueSetResponse response;
  return Translate(stub_->KeyValueSet(&context, request, &response), "KeyValueSet");
}

absl::StatusOr<std::string> CoordinationClient::Get(const std::string& key,
                                                    absl::Duration timeout) const {
  grpc::ClientContext context;
  SetDeadline(context, timeout);
  v1::KeyValueGetRequest request;
  request.set_key(key);
  request.set_timeout_ms(absl::ToInt64Milliseconds(timeout));
  v1::KeyValueGetResponse response;
  absl::Status status = Translate(stub_->KeyValueGet(&context, request, &response), "KeyValueGet");
  if (!status.ok()) return status;
  return response.value();
}

absl::Status CoordinationClient::Delete(const std::string& key) const {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::KeyValueDeleteRequest request;
  request.set_key(key);
  v1::KeyValueDeleteResponse response;
  return Translate(stub_->KeyValueDelete(&context, request, &response), "KeyValueDelete");
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> CoordinationClient::List(
    const std::string& prefix) const {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::KeyValueListRequest request;
  request.set_prefix(prefix);
  v1::KeyValueListResponse response;
  absl::Status status =
      Translate(stub_->KeyValueList(&context, request, &response), "KeyValueList");
  if (!status.ok()) return status;
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& entry : response.entries()) out.emplace_back(entry.key(), entry.value());
  return out;
}

absl::Status CoordinationClient::Barrier(const std::string& barrier_id, const v1::TaskId& task,
                                         const std::vector<v1::TaskId>& participants,
                                         absl::Duration timeout) const {
  grpc::ClientContext context;
  SetDeadline(context, timeout);
  v1::BarrierRequest request;
  request.set_barrier_id(barrier_id);
  request.set_timeout_ms(absl::ToInt64Milliseconds(timeout));
  *request.mutable_task() = task;
  for (const auto& p : participants) *request.add_participants() = p;
  v1::BarrierResponse response;
  return Translate(stub_->Barrier(&context, request, &response), "Barrier");
}

absl::StatusOr<std::vector<v1::TaskState>> CoordinationClient::TaskStates(
    const std::vector<v1::TaskId>& tasks) const {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::GetTaskStatesRequest request;
  for (const auto& task : tasks) *request.add_tasks() = task;
  v1::GetTaskStatesResponse response;
  absl::Status status =
      Translate(stub_->GetTaskStates(&context, request, &response), "GetTaskStates");
  if (!status.ok()) return status;
  return std::vector<v1::TaskState>(response.states().begin(), response.states().end());
}

absl::StatusOr<v1::PreemptionNoticeResponse> CoordinationClient::SendPreemptionNotice(
    const v1::TaskId& task, const std::string& reason, absl::Time deadline) const {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::PreemptionNoticeRequest request;
  *request.mutable_task() = task;
  request.set_reason(reason);
  if (deadline != absl::InfinitePast() && deadline != absl::InfiniteFuture()) {
    request.set_deadline_unix_millis(absl::ToUnixMillis(deadline));
  }
  v1::PreemptionNoticeResponse response;
  absl::Status status =
      Translate(stub_->PreemptionNotice(&context, request, &response), "PreemptionNotice");
  if (!status.ok()) return status;
  return response;
}

HeartbeatSender::HeartbeatSender(std::string coordinator_address, v1::TaskId task,
                                 uint64_t incarnation, std::string task_address,
                                 absl::Duration interval)
    : client_(std::move(coordinator_address), interval),
      task_(std::move(task)),
      incarnation_(incarnation),
      task_address_(std::move(task_address)),
      interval_(interval),
      thread_([this] { Run(); }) {}

HeartbeatSender::~HeartbeatSender() {
  stop_.Notify();
  thread_.join();
}

void HeartbeatSender::Run() {
  bool registered = false;
  bool warned = false;
  do {
    absl::Status status = registered ? client_.Heartbeat(task_, incarnation_)
                                     : client_.RegisterTask(task_, incarnation_, task_address_);
    if (status.ok()) {
      registered = true;
      warned = false;
    } else {
      // NotFound / Aborted: a new coordinator that does not know us; Unavailable: none yet.
      registered = false;
      if (!warned) {
        spdlog::debug("heartbeat of {}:{}: {}", task_.type(), task_.index(), status.ToString());
        warned = true;
      }
    }
  } while (!stop_.WaitForNotificationWithTimeout(interval_));
}

}  // namespace tj
