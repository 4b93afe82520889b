// The client that presents a model's logical variables and tables over all PS tasks: dense ones
// placed (large ones partitioned into slices) by PsPlacement, sparse ids routed by id hash. A dense
// pull or push moves the slices in parallel, at most `max_rpc_bytes` per RPC and
// `max_bytes_in_flight` per call, received straight into (and sent straight from) the caller's one
// buffer per logical variable; sparse calls send one RPC per task.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/ps/byte_chunks.h"
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

  // Computes a range's gradient from its values, element by element or row by row: the elements
  // [first_element, first_element + values.size()) of the variable, whole rows. It may read only
  // `values` and must write every element of `gradient`. An error stops the step.
  using RangeGradientFn = std::function<absl::Status(
      int64_t first_element, std::span<const float> values, std::span<float> gradient)>;
  // A streamed step of one variable: pull, compute and push slice by slice instead of the whole
  // variable three times over. As each pulled slice arrives, its bytes are copied into `values`
  // (the whole variable, reused as by PullInto) a few rows at a time, `compute` writes those rows'
  // gradient into `gradient` (the whole variable's, reused; dtype and shape set here) while they
  // are in cache, the gradient is checked finite in the same pass, and the slice is pushed from a
  // view of it while later slices are still arriving. Pulls and pushes each keep at most
  // `max_bytes_in_flight` outstanding; the worker holds values and gradient plus the pull window.
  // For a worker alone it ends with the same values, gradient and PS state, bit for bit, as
  // PullInto + compute + Push. Unlike Push, a bad gradient is found slice by slice: a non-finite
  // element is InvalidArgument naming the variable and element, that slice and the ones not yet
  // pushed are not, and the slices already pushed stay applied (as after a PS lost mid-Push). On
  // success gRPC has let go of `gradient`, as after Push; on error a caller that reuses it checks
  // use_count() == 1 first.
  absl::Status StreamStep(const std::string& name, v1::Tensor& values,
                          const std::shared_ptr<v1::Tensor>& gradient,
                          const RangeGradientFn& compute) const;

  // Writes a range's gradient (the elements [first_element, first_element + gradient.size()),
  // whole rows) from what the model computed before; must write every element.
  using RangeGradientOnlyFn =
      std::function<absl::Status(int64_t first_element, std::span<float> gradient)>;
  // The push half of StreamStep, for a model whose gradient needs all the values first (softmax:
  // every row's gradient depends on the logits, which depend on every row): `compute` writes the
  // gradient a few rows at a time, checked finite in the same pass, and each slice is pushed as
  // soon as its rows are written while the next ones are computed. `gradient` as in StreamStep
  // (reused, dtype and shape set here); the same errors, and for a worker alone the same gradient
  // and PS state, bit for bit, as computing the whole gradient and Push.
  absl::Status StreamPush(const std::string& name, const std::shared_ptr<v1::Tensor>& gradient,
                          const RangeGradientOnlyFn& compute) const;

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
  // StreamStep (with `pull`) and StreamPush: `compute_slice` runs on the caller's thread, once per
  // slice, when the slice's values have arrived (pull) or before its push is started (no pull).
  using SliceFn = std::function<absl::Status(const VariableSlice& slice, const ByteChunks* pieces)>;
  absl::Status Stream(const VariablePlacement& v, bool pull,
                      const std::shared_ptr<v1::Tensor>& gradient,
                      const SliceFn& compute_slice) const;

  std::vector<std::shared_ptr<PsClient>> ps_;
  PsPlacement placement_;
  std::vector<v1::VariableSpec> variables_;
  std::vector<v1::TableSpec> tables_;
  absl::flat_hash_map<std::string, int64_t> table_dims_;
  ShardedPsOptions options_;
};

}  // namespace tj
