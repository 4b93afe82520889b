// The client that presents a model's logical variables and tables over all PS tasks: dense ones
// placed (large ones partitioned into slices) by PsPlacement, sparse ids routed by id hash. A dense
// pull or push moves the slices in parallel, at most `max_rpc_bytes` per RPC and
// `max_bytes_in_flight` per call, received straight into (and sent straight from) the caller's one
// buffer per logical variable; sparse calls send one RPC per task.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/ps/placement.h"
#include "coordinator/ps/ps_client.h"
#include "tj/v1/ps.pb.h"

namespace tj {

struct ShardedPsOptions {
  // The partitioner and the largest slice (placement.h). The default splits a variable over 1 MiB
  // into up to num_ps shards (TensorFlow's MinSizePartitioner(1 MiB, num_ps)), each stored as
  // slices of at most 16 MiB.
  PlacementOptions placement;
  // Slices of one task are grouped into RPCs of at most this many bytes (a larger slice goes
  // alone).
  int64_t max_rpc_bytes = kDefaultMaxSliceBytes;
  // Bytes of RPCs one Pull / Push / CreateVariables has outstanding at once: what it holds in
  // gRPC's buffers beyond the caller's tensors.
  int64_t max_bytes_in_flight = int64_t{64} << 20;
  // Memory a PS task keeps free beyond its variables and optimizer slots, for requests in flight
  // and copy-on-write during pulls: the plan is refused when it does not fit (CreateVariables).
  int64_t ps_memory_headroom_bytes = int64_t{128} << 20;
};

// The ids to look up in one table.
struct SparseLookup {
  std::string_view table;
  std::span<const int64_t> ids;
};

// Gradients of some rows of one table: ids.size() * dim floats, row-major.
struct SparseUpdate {
  std::string_view table;
  std::span<const int64_t> ids;
  std::span<const float> gradients;
};

// Thread-safe. Errors: a PS that cannot be reached is PsUnavailableError naming it (when several
// tasks fail, a connectivity failure is reported before the others, the lowest task first);
// anything a PS refuses comes back with its code. Input the client can check (unknown names,
// shapes, sizes, NaN or infinity) is refused before any RPC, so a bad push changes no shard.
class ShardedPsClient {
 public:
  // `ps_tasks[i]` is /job:ps/task:i. The variable and table specs are kept (with any initial
  // values) for CreateVariables; workers may pass specs without values, the placement only needs
  // shapes.
  static absl::StatusOr<std::unique_ptr<ShardedPsClient>> Create(
      std::vector<std::shared_ptr<PsClient>> ps_tasks, std::vector<v1::VariableSpec> variables,
      std::vector<v1::TableSpec> tables, ShardedPsOptions options = {});
  // One PsClient per address, task i at addresses[i].
  static absl::StatusOr<std::unique_ptr<ShardedPsClient>> Connect(
      const std::vector<std::string>& addresses, std::vector<v1::VariableSpec> variables,
      std::vector<v1::TableSpec> tables, ShardedPsOptions options = {},
      PsClientOptions client_options = {});

  int num_ps() const { return static_cast<int>(ps_.size()); }
  const PsPlacement& placement() const { return placement_; }
  const PsClient& ps(int task) const { return *ps_[static_cast<size_t>(task)]; }

  // Creates every variable slice and every table on its PS tasks; idempotent like the PS's own.
  // First checks the plan against each task's memory (CheckPsMemory): nothing is created when it
  // does not fit.
  absl::Status CreateVariables() const;
  // ResourceExhausted naming the first variable (largest first) that would not fit a task's
  // memory (PsHealthResponse), with its size and the memory available; OK when a task does not
  // report its memory.
  absl::Status CheckPsMemory() const;

  // The values of the logical variables `names`, in order; split variables are reassembled.
  absl::StatusOr<std::vector<v1::Tensor>> Pull(const std::vector<std::string>& names) const;
  // The same into `values`, reusing their memory: each slice is received straight into its
  // variable's buffer at its offset. On error `values` holds unspecified contents.
  absl::Status PullInto(const std::vector<std::string>& names,
                        std::vector<v1::Tensor>& values) const;
  // Applies gradients[i] to names[i] with each variable's optimizer.
  absl::Status Push(const std::vector<std::string>& names, std::vector<v1::Tensor> gradients) const;
  // The same, each slice sent from a view of its gradient: nothing of the size of a gradient is
  // allocated. gRPC holds a reference to the gradients until it has written them; a successful
  // push returns once it has let go, so the caller holds the only reference again and can write
  // the next step's gradients into the same buffers. After a failed push gRPC may still hold
  // them: a caller that reuses a buffer checks use_count() == 1 and otherwise takes a fresh one.
  absl::Status Push(const std::vector<std::string>& names,
                    const std::vector<std::shared_ptr<const v1::Tensor>>& gradients) const;

  // One float32 [n, dim] tensor per lookup, rows in the order of its ids.
  absl::StatusOr<std::vector<v1::Tensor>> Lookup(std::span<const SparseLookup> lookups) const;
  absl::Status PushSparse(std::span<const SparseUpdate> updates) const;

 private:
  ShardedPsClient(std::vector<std::shared_ptr<PsClient>> ps, PsPlacement placement,
                  std::vector<v1::VariableSpec> variables, std::vector<v1::TableSpec> tables,
                  ShardedPsOptions options);

  // One RPC's worth of slices: (variable index in the call, slice index) pairs, all on `task`.
  struct Batch {
    int task = 0;
    int64_t bytes = 0;
    std::vector<std::pair<size_t, size_t>> slices;
  };
  // The slices of `placements` grouped per task into batches of at most max_rpc_bytes, ordered so
  // that consecutive batches go to different tasks (the window then spreads over all tasks).
  std::vector<Batch> Batches(const std::vector<const VariablePlacement*>& placements) const;

  // Framing per slice in a request (name, tensor header): counts toward an RPC's size so that
  // many tiny slices still make bounded messages.
  static constexpr int64_t kSliceOverheadBytes = 256;
  // The shape of rows [begin, end) of `spec`.
  static std::vector<int64_t> SliceShape(const TensorSpec& spec, const VariableSlice& slice);

  // The dim of `table`, or NotFound naming it.
  absl::StatusOr<int64_t> TableDim(std::string_view table) const;
  // NotFound for a name this client was not created with.
  absl::StatusOr<const VariablePlacement*> FindVariable(const std::string& name) const;

  std::vector<std::shared_ptr<PsClient>> ps_;
  PsPlacement placement_;
  std::vector<v1::VariableSpec> variables_;
  std::vector<v1::TableSpec> tables_;
  absl::flat_hash_map<std::string, int64_t> table_dims_;
  ShardedPsOptions options_;
};

}  // namespace tj
