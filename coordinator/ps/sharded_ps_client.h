// The client that presents a model's logical variables and tables over all PS tasks: dense ones
// placed (large ones split) by PsPlacement, sparse ids routed by id hash; each call sends at most
// one RPC per task, to all tasks in parallel, and stitches the answers back in request order.
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
  // Variables larger than this are split along dimension 0 over up to num_ps tasks.
  int64_t max_shard_bytes = int64_t{1} << 20;
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

  // Creates every variable shard and every table on its PS tasks; idempotent like the PS's own.
  absl::Status CreateVariables() const;

  // The values of the logical variables `names`, in order; split variables are reassembled.
  absl::StatusOr<std::vector<v1::Tensor>> Pull(const std::vector<std::string>& names) const;
  // Applies gradients[i] to names[i] with each variable's optimizer.
  absl::Status Push(const std::vector<std::string>& names, std::vector<v1::Tensor> gradients) const;

  // One float32 [n, dim] tensor per lookup, rows in the order of its ids.
  absl::StatusOr<std::vector<v1::Tensor>> Lookup(std::span<const SparseLookup> lookups) const;
  absl::Status PushSparse(std::span<const SparseUpdate> updates) const;

 private:
  ShardedPsClient(std::vector<std::shared_ptr<PsClient>> ps, PsPlacement placement,
                  std::vector<v1::VariableSpec> variables, std::vector<v1::TableSpec> tables);

  // The dim of `table`, or NotFound naming it.
  absl::StatusOr<int64_t> TableDim(std::string_view table) const;
  // NotFound for a name this client was not created with.
  absl::StatusOr<const VariablePlacement*> FindVariable(const std::string& name) const;

  std::vector<std::shared_ptr<PsClient>> ps_;
  PsPlacement placement_;
  std::vector<v1::VariableSpec> variables_;
  std::vector<v1::TableSpec> tables_;
  absl::flat_hash_map<std::string, int64_t> table_dims_;
};

}  // namespace tj
