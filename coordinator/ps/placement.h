// Where a model's dense variables live among the PS tasks. A partitioner with the semantics of
// TensorFlow's `variable_partitioner` splits a variable along dim 0 into shards; each shard lives
// on one task and is stored as one or more slices of at most `max_slice_bytes`, the unit every RPC
// moves. A pure function of (variable list, num_ps, options), so every worker and a restarted
// coordinator compute the same placement alone. Sparse ids go by id hash (PsTaskOfId, id_hash.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "coordinator/ps/tensor_spec.h"
#include "tj/v1/ps.pb.h"

namespace tj {

enum class PartitionerKind {
  kMinSize,      // tf.distribute.experimental.partitioners.MinSizePartitioner
  kMaxSize,      // MaxSizePartitioner
  kFixedShards,  // FixedShardsPartitioner
};

// How many shards a variable is split into along dim 0, with TensorFlow's formulas (rows = dim 0,
// never more shards than rows, never fewer than one; scalars are never split):
// - min_size: min(rows, max_shards, ceil(bytes / min_shard_bytes)); max_shards 0 means num_ps
//   (TensorFlow's default is 1; its PS tutorial passes the number of PS, as we do).
// - max_size: ceil(rows / max(1, floor(max_shard_bytes / row_bytes))), then at most max_shards
//   (0: no limit).
// - fixed: min(rows, num_shards).
struct PartitionerConfig {
  PartitionerKind kind = PartitionerKind::kMinSize;
  int64_t shard_bytes = int64_t{1} << 20;  // min_shard_bytes or max_shard_bytes
  int64_t max_shards = 0;                  // min_size / max_size
  int64_t num_shards = 0;                  // fixed

  static PartitionerConfig MinSize(int64_t min_shard_bytes, int64_t max_shards = 0) {
    return {PartitionerKind::kMinSize, min_shard_bytes, max_shards, 0};
  }
  static PartitionerConfig MaxSize(int64_t max_shard_bytes, int64_t max_shards = 0) {
    return {PartitionerKind::kMaxSize, max_shard_bytes, max_shards, 0};
  }
  static PartitionerConfig FixedShards(int64_t num_shards) {
    return {PartitionerKind::kFixedShards, 0, 0, num_shards};
  }

  // "min_size:<bytes>[:<max_shards>]", "max_size:<bytes>[:<max_shards>]" or "fixed:<shards>";
  // bytes take a KiB/MiB/GiB suffix. InvalidArgument naming the text.
  static absl::StatusOr<PartitionerConfig> Parse(std::string_view text);
  // The form Parse reads (bytes written plainly).
  std::string ToString() const;
  absl::Status Check() const;

  // Shards of a variable of `spec` over `num_ps` tasks.
  int64_t NumShards(const TensorSpec& spec, int num_ps) const;
};

// Largest slice, hence largest dense payload of one RPC, by default: far below gRPC's and
// protobuf's limits, and large enough that per-call overhead is small next to the transfer.
inline constexpr int64_t kDefaultMaxSliceBytes = int64_t{16} << 20;

struct PlacementOptions {
  PartitionerConfig partitioner;
  // Each shard is stored as ceil(bytes / max_slice_bytes) slices of near-equal rows, all on the
  // shard's task. A variable whose single row is larger is refused.
  int64_t max_slice_bytes = kDefaultMaxSliceBytes;
};

struct VariableSlice {
  int ps_task = 0;
  std::string ps_name;    // the name on that task: the variable's, or "<name>/part_<i>" when split
  int64_t row_begin = 0;  // rows [row_begin, row_end) of dimension 0 (whole variable: all rows)
  int64_t row_end = 0;
  int64_t num_bytes = 0;
  int64_t byte_offset = 0;  // of row_begin in the logical variable
  int shard = 0;            // the partitioner's shard this slice belongs to
};

struct VariablePlacement {
  std::string name;
  TensorSpec spec;                    // of the logical variable
  int64_t num_bytes = 0;              // of the logical variable
  int64_t num_shards = 1;             // the partitioner's
  std::vector<VariableSlice> slices;  // in row order; exactly one when not split
  bool split() const { return slices.size() > 1; }
};

class PsPlacement {
 public:
  // Shards are placed greedily, as units: variables largest first (ties by name), each shard onto
  // the task holding the fewest of this variable's shards, then the fewest bytes, then the lowest
  // index: so the first num_ps shards of a variable land on distinct tasks and more wrap around,
  // balanced. Slices are named "<name>/part_<i>" in row order over the whole variable (the name
  // alone when there is one slice). InvalidArgument for a bad spec (naming it), a repeated name, a
  // slice name that collides with another variable, a row larger than max_slice_bytes, num_ps < 1
  // or bad options.
  static absl::StatusOr<PsPlacement> Plan(const std::vector<v1::VariableSpec>& variables,
                                          int num_ps, const PlacementOptions& options);
  // The plan of earlier sessions: min_size(threshold, num_ps).
  static absl::StatusOr<PsPlacement> Plan(const std::vector<v1::VariableSpec>& variables,
                                          int num_ps, int64_t max_shard_bytes) {
    return Plan(variables, num_ps, {.partitioner = PartitionerConfig::MinSize(max_shard_bytes)});
  }

  int num_ps() const { return static_cast<int>(bytes_per_task_.size()); }
  const PlacementOptions& options() const { return options_; }
  // In the order Plan was given them.
  const std::vector<VariablePlacement>& variables() const { return variables_; }
  // nullptr for an unknown name.
  const VariablePlacement* Find(std::string_view name) const;
  // Index of `name` in variables(), or -1.
  int IndexOf(std::string_view name) const;
  const std::vector<int64_t>& bytes_per_task() const { return bytes_per_task_; }

 private:
  PlacementOptions options_;
  std::vector<VariablePlacement> variables_;
  absl::flat_hash_map<std::string, int> index_;
  std::vector<int64_t> bytes_per_task_;
};

}  // namespace tj
