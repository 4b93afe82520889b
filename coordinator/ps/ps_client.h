// The client worker functions use to talk to one parameter-server task. Every RPC has a deadline
// (SaveShard and RestoreShard a stall timeout instead), and a PS that cannot be reached is reported
// as PsUnavailableError (see ps_error.h) so callers can tell a lost PS from an application error.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/impl/rpc_method.h>
#include <grpcpp/support/byte_buffer.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/checkpoint/file_digest.h"
#include "tj/v1/ps.grpc.pb.h"

namespace tj {

class StallWatchdog;

struct PsClientOptions {
  // Deadline of each RPC, measured from when it is sent. Not applied to SaveShard, RestoreShard
  // and the creates (Create, CreateVariables, and CreateAsync for ShardedPsClient::
  // CreateVariables), which are bound by the stall timeout.
  absl::Duration rpc_timeout = absl::Seconds(10);
  // SaveShard and RestoreShard have no total deadline (a large shard on a slow volume takes
  // minutes); they fail as an unreachable PS when the PS reports no progress for this long. So
  // does ShardedPsClient::CreateVariables when none of its requests finished for this long.
  absl::Duration shard_stall_timeout = absl::Seconds(60);
  // A dense push the PS holds back (its push window is full: PushWindow) is sent again until it is
  // admitted; only after this long does it fail, RESOURCE_EXHAUSTED naming the PS's window. Every
  // answer shows the PS alive, so a held push is never reported as a lost PS.
  absl::Duration push_held_back_timeout = absl::Minutes(10);
};

// Told how far a SaveShard / RestoreShard has got, each time the PS reports it (about every
// second), on the calling thread.
using ShardProgressCallback = std::function<void(const v1::ShardProgress&)>;

// Thread-safe; share one client per PS task among threads.
class PsClient {
 public:
  // `address` only names the PS in error messages (a grpc::Channel does not expose its target); the
  // channel is what connects. Prefer Connect, which passes the same address to both.
  PsClient(std::shared_ptr<grpc::Channel> channel, int ps_task, std::string address = {},
           PsClientOptions options = {});

  // A client over MakePsChannel(address).
  static std::unique_ptr<PsClient> Connect(const std::string& address, int ps_task,
                                           PsClientOptions options = {});

  int ps_task() const { return ps_task_; }
  const std::string& address() const { return address_; }
  const PsClientOptions& options() const { return options_; }

  // Idempotent on the PS: existing variables with the same dtype and shape keep their values.
  absl::Status CreateVariables(std::vector<v1::VariableSpec> variables) const;
  // The current values of `names`, in order.
  absl::StatusOr<std::vector<v1::Tensor>> Pull(const std::vector<std::string>& names) const;
  // The same into `values`, reusing the memory of the tensors already there: a caller that pulls
  // the same variables every step receives into the same buffers instead of fresh ones (for large
  // tensors, the page faults of fresh memory cost more than the transfer). On error `values` holds
  // unspecified contents.
  absl::Status PullInto(const std::vector<std::string>& names,
                        std::vector<v1::Tensor>& values) const;
  // Applies deltas[i] to variable names[i] with its optimizer (added element-wise under the default
  // assign_add); all-or-nothing on the PS. Held back by the PS's push window, it is sent again
  // (PsClientOptions::push_held_back_timeout); so is PushRawAsync's, not PushAsync's.
  absl::Status Push(const std::vector<std::string>& names, std::vector<v1::Tensor> deltas) const;
  absl::StatusOr<v1::PsHealthResponse> Health() const;
  // Health, waiting up to `timeout` for the PS to come up (a PS starting at the same time as its
  // coordinator, a pod not scheduled yet).
  absl::StatusOr<v1::PsHealthResponse> WaitForHealth(absl::Duration timeout) const;

  // Creates the request's variables and tables; idempotent like CreateVariables.
  absl::Status Create(const v1::CreateVariablesRequest& request) const;
  // Rows of each lookup's ids, one [n, dim] tensor per lookup; missing rows are created.
  absl::StatusOr<v1::LookupResponse> Lookup(const v1::LookupRequest& request) const;
  // Applies sparse gradients with each table's optimizer; all-or-nothing on the PS.
  absl::Status PushSparse(const v1::PushSparseRequest& request) const;
  // Saves / replaces the PS's whole state to / from `path` on the PS's file system. Streamed: the
  // PS reports progress while it works, so the call takes as long as the disk needs; a broken
  // connection, or no progress for options.shard_stall_timeout (a frozen PS, a hung disk), is a
  // PsUnavailableError naming this PS. `context` (no deadline needed) lets another thread cancel
  // the call with TryCancel; a cancelled call also reports PsUnavailableError.
  absl::StatusOr<v1::SaveShardResponse> SaveShard(const std::string& path) const;
  absl::StatusOr<v1::SaveShardResponse> SaveShard(
      grpc::ClientContext& context, const std::string& path,
      const ShardProgressCallback& on_progress = {}) const;
  absl::StatusOr<v1::RestoreShardResponse> RestoreShard(const std::string& path) const;
  // With `expected`, the PS checks that the file has that size and CRC-32C as it reads it
  // (DataLoss naming the file otherwise; the PS then holds nothing until a restore succeeds,
  // VariableStore::ImportState): the shard is read once.
  absl::StatusOr<v1::RestoreShardResponse> RestoreShard(
      grpc::ClientContext& context, const std::string& path,
      const ShardProgressCallback& on_progress = {},
      const std::optional<FileDigest>& expected = std::nullopt) const;
  // The same with a whole request: a save's ids (incremental checkpoints), a restore's deltas and
  // digests.
  absl::StatusOr<v1::SaveShardResponse> SaveShard(
      grpc::ClientContext& context, const v1::SaveShardRequest& request,
      const ShardProgressCallback& on_progress = {}) const;
  absl::StatusOr<v1::RestoreShardResponse> RestoreShard(
      grpc::ClientContext& context, const v1::RestoreShardRequest& request,
      const ShardProgressCallback& on_progress = {}) const;

  // Asynchronous forms, for fanning one logical call out to many PS tasks at once
  // (ShardedPsClient). The deadline is set on `context` (CreateAsync sets none: its caller bounds
  // it with a stall timeout); `done` runs once, on a gRPC thread, with the status already
  // translated like the synchronous calls'. `context`, `request`, `response` and this client must
  // outlive that call.
  using Done = std::function<void(absl::Status)>;
  void CreateAsync(grpc::ClientContext& context, const v1::CreateVariablesRequest& request,
                   v1::CreateVariablesResponse& response, Done done) const;
  void PullAsync(grpc::ClientContext& context, const v1::PullRequest& request,
                 v1::PullResponse& response, Done done) const;
  void PushAsync(grpc::ClientContext& context, const v1::PushRequest& request,
                 v1::PushResponse& response, Done done) const;
  // Pull and Push on raw buffers (dense_wire.h): the answer of a pull stays in gRPC's slices for
  // DecodePullResponseInto; a push is sent from the views EncodePushRequest made.
  void PullRawAsync(grpc::ClientContext& context, const v1::PullRequest& request,
                    grpc::ByteBuffer& response, Done done) const;
  void PushRawAsync(grpc::ClientContext& context, const grpc::ByteBuffer& request,
                    grpc::ByteBuffer& response, Done done) const;
  void LookupAsync(grpc::ClientContext& context, const v1::LookupRequest& request,
                   v1::LookupResponse& response, Done done) const;
  void PushSparseAsync(grpc::ClientContext& context, const v1::PushSparseRequest& request,
                       v1::PushSparseResponse& response, Done done) const;

 private:
  // OK, a PsUnavailableError for connectivity failures, otherwise the PS's own status unchanged.
  absl::Status Translate(const grpc::Status& status) const;
  void SetDeadline(grpc::ClientContext& context) const;
  // A create in one request (Create, CreateVariables) does work proportional to its variables'
  // size and reports no progress: the stall timeout is its deadline, not the data path's.
  void SetCreateDeadline(grpc::ClientContext& context) const;
  // One synchronous unary call of `method` with a deadline, translated.
  template <typename Request, typename Response>
  absl::Status Call(grpc::Status (v1::ParameterServer::Stub::*method)(grpc::ClientContext*,
                                                                      const Request&, Response*),
                    const Request& request, Response& response) const;
  // Reads a streamed SaveShard / RestoreShard to its end under `watchdog`: progress goes to
  // `on_progress`, the final `done` message is the result.
  template <typename Message, typename Result>
  absl::StatusOr<Result> FinishShardStream(const char* method, grpc::ClientReader<Message>& reader,
                                           StallWatchdog& watchdog,
                                           const ShardProgressCallback& on_progress) const;
  // A push's deadline and kPushBytesHeader; one attempt of PushRawAsync, and the next when the PS
  // held it back (ps_client_push.cc).
  struct PushAttempts;
  void PreparePush(grpc::ClientContext& context, const grpc::ByteBuffer& request) const;
  void SendPush(grpc::ClientContext& context, std::shared_ptr<PushAttempts> attempts) const;
  // Wraps `done` into the callback gRPC's callback API expects.
  std::function<void(grpc::Status)> Translating(Done done) const;

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ParameterServer::Stub> stub_;
  // Pull and Push on raw buffers (dense_wire.h), not through stub_: no copy of the tensor bytes
  // into or out of protobuf strings.
  grpc::internal::RpcMethod raw_pull_;
  grpc::internal::RpcMethod raw_push_;
  int ps_task_;
  std::string address_;
  PsClientOptions options_;
};

}  // namespace tj
