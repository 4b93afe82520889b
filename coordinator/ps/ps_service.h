// The gRPC ParameterServer service of one PS task: thin glue from RPCs to a VariableStore, plus the
// task's identity (Health), so that clients can notice a restarted PS by its new incarnation, and a
// drain so that shutdown lets running calls finish without waiting on idle connections.
#pragma once

#include <cstdint>

#include "absl/time/time.h"
#include "coordinator/base/coordinator_generation.h"
#include "coordinator/ps/call_drain.h"
#include "coordinator/ps/ps_counters.h"
#include "coordinator/ps/ps_dense_methods.h"
#include "coordinator/ps/push_window.h"
#include "coordinator/ps/shard_file.h"
#include "coordinator/ps/variable_store.h"
#include "tj/v1/ps.grpc.pb.h"

namespace tj {

struct PsServiceOptions {
  // How often a streamed SaveShard / RestoreShard reports progress while bytes keep moving.
  absl::Duration shard_progress_interval = absl::Milliseconds(500);
  // Test only (ShardFileOptions::test_bytes_per_second): plays a slow volume. 0: no cap.
  int64_t test_shard_bytes_per_second = 0;
  // Test only: CreateVariables answers no sooner than its variables' bytes at this rate allow
  // (a loaded PS). 0: no pacing.
  int64_t test_create_bytes_per_second = 0;
  // Bytes of Push bodies received at once (PushWindow); 0: no bound.
  int64_t push_window_bytes = 0;
  // The gRPC ResourceQuota of the PS's server (GrpcMemoryBytesFor); 0: none.
  int64_t grpc_memory_bytes = 0;
  // How long a push waits for room before it is answered "held back" (at most half the time its
  // caller's deadline leaves).
  absl::Duration push_hold = absl::Seconds(5);
};

// The push window from TJ_PS_PUSH_WINDOW_BYTES (bytes; 0: no bound), else PushWindowBytesFor(the
// memory budget), and the test-only TJ_TEST_SHARD_BYTES_PER_SECOND and
// TJ_TEST_CREATE_BYTES_PER_SECOND (positive integers; anything else is ignored with a warning), so
// that tests of real tj-ps / tj-train processes can slow their checkpoint I/O and creates down.
PsServiceOptions PsServiceOptionsFromEnvironment();

// Pull and Push are served on raw buffers (ps_dense_methods.h, zero-copy) instead of the generated
// protobuf handlers.
class PsService final : public v1::ParameterServer::Service {
 public:
  // `store` must outlive the service. The incarnation is a fresh non-zero random number.
  PsService(int ps_task, VariableStore& store, PsServiceOptions options = {});

  int ps_task() const { return ps_task_; }
  const PushWindow& push_window() const { return push_window_; }
  const PsCounters& counters() const { return counters_; }
  uint64_t incarnation() const { return incarnation_; }

  // From now on every call fails UNAVAILABLE; waits until the calls already running finish or
  // `deadline` passes, and returns how many are still running.
  int64_t Drain(absl::Time deadline) { return drain_.CloseAndDrain(deadline); }

  grpc::Status Health(grpc::ServerContext* context, const v1::PsHealthRequest* request,
                      v1::PsHealthResponse* response) override;
  grpc::Status CreateVariables(grpc::ServerContext* context,
                               const v1::CreateVariablesRequest* request,
                               v1::CreateVariablesResponse* response) override;
  grpc::Status Lookup(grpc::ServerContext* context, const v1::LookupRequest* request,
                      v1::LookupResponse* response) override;
  grpc::Status PushSparse(grpc::ServerContext* context, const v1::PushSparseRequest* request,
                          v1::PushSparseResponse* response) override;
  grpc::Status SaveShard(grpc::ServerContext* context, const v1::SaveShardRequest* request,
                         v1::SaveShardResponse* response) override;
  grpc::Status RestoreShard(grpc::ServerContext* context, const v1::RestoreShardRequest* request,
                            v1::RestoreShardResponse* response) override;
  grpc::Status StreamSaveShard(grpc::ServerContext* context, const v1::SaveShardRequest* request,
                               grpc::ServerWriter<v1::SaveShardProgress>* writer) override;
  grpc::Status StreamRestoreShard(grpc::ServerContext* context,
                                  const v1::RestoreShardRequest* request,
                                  grpc::ServerWriter<v1::RestoreShardProgress>* writer) override;

 private:
  // ShardFileOptions that report progress on `writer` at most every shard_progress_interval.
  template <typename Message>
  ShardFileOptions ShardOptions(grpc::ServerContext* context, grpc::ServerWriter<Message>* writer,
                                absl::Time& last_report) const;

  // The generation fence for the coordinator-only calls, raised first to the generation that
  // claimed the checkpoint directory.
  grpc::Status AdmitCoordinator(const grpc::ServerContext& context, absl::string_view what);
  // Test only: waits as test_create_bytes_per_second asks for `request`'s variables.
  void PaceCreate(const grpc::ServerContext& context,
                  const v1::CreateVariablesRequest& request) const;
  // A Push: admitted to the push window (or answered "held back"), then read and applied.
  grpc::Status ServePush(grpc::ServerContext& context, RawUnaryStream& stream);

  const int ps_task_;
  const uint64_t incarnation_;
  const PsServiceOptions options_;
  VariableStore& store_;
  CallDrain drain_;
  PushWindow push_window_;
  PsCounters counters_;  // what was served, for /metrics
  // Only the newest coordinator creates, saves and restores (coordinator_generation.h).
  GenerationFence fence_;
};

}  // namespace tj
