#include "coordinator/ps/ps_client.h"

#include <grpcpp/client_context.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/support/client_callback.h>

#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/base/wire_status.h"
#include "coordinator/ps/dense_wire.h"
#include "coordinator/ps/ps_channel.h"
#include "coordinator/ps/ps_error.h"
#include "coordinator/ps/stall_watchdog.h"

namespace tj {
namespace {

// Codes that mean "the PS did not answer" rather than "the PS answered no". The PS itself never
// returns these (VariableStore speaks NotFound, InvalidArgument, AlreadyExists), so here they come
// from the transport: this client never cancels its own calls, so CANCELLED means the server went
// away mid-call, and gRPC core still reports some broken streams as UNKNOWN "Stream removed"
// (grpc/grpc#34076).
bool IsConnectivityFailure(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::UNKNOWN:
      return true;
    default:
      return false;
  }
}

}  // namespace

PsClient::PsClient(std::shared_ptr<grpc::Channel> channel, int ps_task, std::string address,
                   PsClientOptions options)
    : channel_(std::move(channel)),
      stub_(v1::ParameterServer::NewStub(channel_)),
      raw_pull_(kPsPullMethod, grpc::internal::RpcMethod::NORMAL_RPC, channel_),
      raw_push_(kPsPushMethod, grpc::internal::RpcMethod::NORMAL_RPC, channel_),
      ps_task_(ps_task),
      address_(std::move(address)),
      options_(options) {}

std::unique_ptr<PsClient> PsClient::Connect(const std::string& address, int ps_task,
                                            PsClientOptions options) {
  return std::make_unique<PsClient>(MakePsChannel(address), ps_task, address, options);
}

absl::Status PsClient::CreateVariables(std::vector<v1::VariableSpec> variables) const {
  v1::CreateVariablesRequest request;
  request.mutable_variables()->Reserve(static_cast<int>(variables.size()));
  // Moving arena-less messages swaps their buffers: the initial values are not copied.
  for (v1::VariableSpec& spec : variables) *request.add_variables() = std::move(spec);
  v1::CreateVariablesResponse response;
  grpc::ClientContext context;
  SetCreateDeadline(context);
  return Translate(stub_->CreateVariables(&context, request, &response));
}

absl::StatusOr<std::vector<v1::Tensor>> PsClient::Pull(
    const std::vector<std::string>& names) const {
  std::vector<v1::Tensor> values;
  TJ_RETURN_IF_ERROR(PullInto(names, values));
  return values;
}

absl::Status PsClient::PullInto(const std::vector<std::string>& names,
                                std::vector<v1::Tensor>& values) const {
  v1::PullRequest request;
  request.mutable_names()->Assign(names.begin(), names.end());
  // The request goes out as protobuf; the answer comes back raw, decoded into `values` in place.
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  SetDeadline(context);
  TJ_RETURN_IF_ERROR(Translate(grpc::internal::BlockingUnaryCall<v1::PullRequest, grpc::ByteBuffer>(
      channel_.get(), raw_pull_, &context, request, &response)));
  if (absl::Status decoded = DecodePullResponse(response, values); !decoded.ok()) {
    return absl::InternalError(absl::StrCat("parameter server /job:ps/task:", ps_task_, " at ",
                                            address_, ": ", decoded.message()));
  }
  if (values.size() != names.size()) {
    return absl::InternalError(absl::StrCat("parameter server /job:ps/task:", ps_task_,
                                            " answered ", values.size(), " values to a pull of ",
                                            names.size()));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::PsHealthResponse> PsClient::Health() const {
  v1::PsHealthRequest request;
  v1::PsHealthResponse response;
  grpc::ClientContext context;
  SetDeadline(context);
  absl::Status status = Translate(stub_->Health(&context, request, &response));
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<v1::PsHealthResponse> PsClient::WaitForHealth(absl::Duration timeout) const {
  v1::PsHealthRequest request;
  v1::PsHealthResponse response;
  grpc::ClientContext context;
  // Waits through connection failures (gRPC keeps reconnecting with the channel's short backoff)
  // instead of failing at the first refused connection.
  context.set_wait_for_ready(true);
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout));
  absl::Status status = Translate(stub_->Health(&context, request, &response));
  if (!status.ok()) return status;
  return response;
}

template <typename Request, typename Response>
absl::Status PsClient::Call(grpc::Status (v1::ParameterServer::Stub::*method)(grpc::ClientContext*,
                                                                              const Request&,
                                                                              Response*),
                            const Request& request, Response& response) const {
  grpc::ClientContext context;
  SetDeadline(context);
  return Translate((stub_.get()->*method)(&context, request, &response));
}

absl::Status PsClient::Create(const v1::CreateVariablesRequest& request) const {
  v1::CreateVariablesResponse response;
  grpc::ClientContext context;
  SetCreateDeadline(context);
  return Translate(stub_->CreateVariables(&context, request, &response));
}

absl::StatusOr<v1::LookupResponse> PsClient::Lookup(const v1::LookupRequest& request) const {
  v1::LookupResponse response;
  TJ_RETURN_IF_ERROR(Call(&v1::ParameterServer::Stub::Lookup, request, response));
  return response;
}

absl::Status PsClient::PushSparse(const v1::PushSparseRequest& request) const {
  v1::PushSparseResponse response;
  return Call(&v1::ParameterServer::Stub::PushSparse, request, response);
}

absl::StatusOr<v1::SaveShardResponse> PsClient::SaveShard(const std::string& path) const {
  grpc::ClientContext context;
  return SaveShard(context, path);
}

absl::StatusOr<v1::SaveShardResponse> PsClient::SaveShard(
    grpc::ClientContext& context, const std::string& path,
    const ShardProgressCallback& on_progress) const {
  v1::SaveShardRequest request;
  request.set_path(path);
  return SaveShard(context, request, on_progress);
}

absl::StatusOr<v1::SaveShardResponse> PsClient::SaveShard(
    grpc::ClientContext& context, const v1::SaveShardRequest& request,
    const ShardProgressCallback& on_progress) const {
  // Started before the call, so that even a call stuck at its start is bounded.
  StallWatchdog watchdog(context, options_.shard_stall_timeout);
  std::unique_ptr<grpc::ClientReader<v1::SaveShardProgress>> reader =
      stub_->StreamSaveShard(&context, request);
  return FinishShardStream<v1::SaveShardProgress, v1::SaveShardResponse>("SaveShard", *reader,
                                                                         watchdog, on_progress);
}

absl::StatusOr<v1::RestoreShardResponse> PsClient::RestoreShard(const std::string& path) const {
  grpc::ClientContext context;
  return RestoreShard(context, path);
}

absl::StatusOr<v1::RestoreShardResponse> PsClient::RestoreShard(
    grpc::ClientContext& context, const std::string& path, const ShardProgressCallback& on_progress,
    const std::optional<FileDigest>& expected) const {
  v1::RestoreShardRequest request;
  request.set_path(path);
  if (expected.has_value()) {
    request.mutable_digest()->set_bytes(static_cast<int64_t>(expected->bytes));
    request.mutable_digest()->set_crc32c(expected->crc32c);
  }
  return RestoreShard(context, request, on_progress);
}

absl::StatusOr<v1::RestoreShardResponse> PsClient::RestoreShard(
    grpc::ClientContext& context, const v1::RestoreShardRequest& request,
    const ShardProgressCallback& on_progress) const {
  StallWatchdog watchdog(context, options_.shard_stall_timeout);
  std::unique_ptr<grpc::ClientReader<v1::RestoreShardProgress>> reader =
      stub_->StreamRestoreShard(&context, request);
  return FinishShardStream<v1::RestoreShardProgress, v1::RestoreShardResponse>(
      "RestoreShard", *reader, watchdog, on_progress);
}

template <typename Message, typename Result>
absl::StatusOr<Result> PsClient::FinishShardStream(const char* method,
                                                   grpc::ClientReader<Message>& reader,
                                                   StallWatchdog& watchdog,
                                                   const ShardProgressCallback& on_progress) const {
  Message message;
  std::optional<Result> result;
  while (reader.Read(&message)) {
    watchdog.Progress();
    if (message.has_progress()) {
      if (on_progress) on_progress(message.progress());
    } else if (message.has_done()) {
      result = std::move(*message.mutable_done());
    }
  }
  const grpc::Status status = reader.Finish();
  watchdog.Stop();
  if (watchdog.stalled()) {
    return PsUnavailableError(
        ps_task_, address_,
        absl::StrCat(method, " stalled: no progress for ", absl::FormatDuration(watchdog.timeout()),
                     " (the shard stall timeout); the PS is frozen or its disk stopped"));
  }
  TJ_RETURN_IF_ERROR(Translate(status));
  if (!result.has_value()) {
    return absl::InternalError(absl::StrCat("parameter server /job:ps/task:", ps_task_, " at ",
                                            address_, ": ", method, " ended without a result"));
  }
  return *std::move(result);
}

void PsClient::CreateAsync(grpc::ClientContext& context, const v1::CreateVariablesRequest& request,
                           v1::CreateVariablesResponse& response, Done done) const {
  stub_->async()->CreateVariables(&context, &request, &response, Translating(std::move(done)));
}

void PsClient::PullAsync(grpc::ClientContext& context, const v1::PullRequest& request,
                         v1::PullResponse& response, Done done) const {
  SetDeadline(context);
  stub_->async()->Pull(&context, &request, &response, Translating(std::move(done)));
}

void PsClient::PushAsync(grpc::ClientContext& context, const v1::PushRequest& request,
                         v1::PushResponse& response, Done done) const {
  SetDeadline(context);
  stub_->async()->Push(&context, &request, &response, Translating(std::move(done)));
}

void PsClient::PullRawAsync(grpc::ClientContext& context, const v1::PullRequest& request,
                            grpc::ByteBuffer& response, Done done) const {
  SetDeadline(context);
  grpc::internal::CallbackUnaryCall<v1::PullRequest, grpc::ByteBuffer>(
      channel_.get(), raw_pull_, &context, &request, &response, Translating(std::move(done)));
}

void PsClient::LookupAsync(grpc::ClientContext& context, const v1::LookupRequest& request,
                           v1::LookupResponse& response, Done done) const {
  SetDeadline(context);
  stub_->async()->Lookup(&context, &request, &response, Translating(std::move(done)));
}

void PsClient::PushSparseAsync(grpc::ClientContext& context, const v1::PushSparseRequest& request,
                               v1::PushSparseResponse& response, Done done) const {
  SetDeadline(context);
  stub_->async()->PushSparse(&context, &request, &response, Translating(std::move(done)));
}

std::function<void(grpc::Status)> PsClient::Translating(Done done) const {
  return [this, done = std::move(done)](grpc::Status status) { done(Translate(status)); };
}

absl::Status PsClient::Translate(const grpc::Status& status) const {
  if (status.ok()) return absl::OkStatus();
  if (IsConnectivityFailure(status.error_code())) {
    return PsUnavailableError(
        ps_task_, address_,
        absl::StrCat(absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())),
                     ": ", status.error_message()));
  }
  return FromGrpc(status);
}

void PsClient::SetCreateDeadline(grpc::ClientContext& context) const {
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoNanoseconds(options_.shard_stall_timeout));
}

void PsClient::SetDeadline(grpc::ClientContext& context) const {
  context.set_deadline(std::chrono::system_clock::now() +
                       absl::ToChronoNanoseconds(options_.rpc_timeout));
}

}  // namespace tj
