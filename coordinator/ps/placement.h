// Where a model's dense variables live among the PS tasks: whole on one task, or split along dim 0
// over distinct tasks when large. A pure function of (variable list, num_ps, threshold), so every
// worker computes the same placement alone. Sparse ids go by id hash (PsTaskOfId, id_hash.h).
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

struct VariableShard {
  int ps_task = 0;
  std::string ps_name;    // the name on that task: the variable's, or "<name>/part_<i>" when split
  int64_t row_begin = 0;  // rows [row_begin, row_end) of dimension 0 (whole variable: all rows)
  int64_t row_end = 0;
  int64_t num_bytes = 0;
};

struct VariablePlacement {
  std::string name;
  TensorSpec spec;                    // of the logical variable
  std::vector<VariableShard> shards;  // in row order; exactly one when not split
  bool split() const { return shards.size() > 1; }
};

class PsPlacement {
 public:
  // Balances bytes greedily: largest first (ties by name), each onto the least-loaded task (ties by
  // lowest index); a variable over `max_shard_bytes` is split into min(num_ps, rows,
  // ceil(bytes / max_shard_bytes)) shards of near-equal rows (the first ones get one extra), placed
  // on that many least-loaded distinct tasks. InvalidArgument for a bad spec (naming it), a
  // repeated name, num_ps < 1 or max_shard_bytes < 1.
  static absl::StatusOr<PsPlacement> Plan(const std::vector<v1::VariableSpec>& variables,
                                          int num_ps, int64_t max_shard_bytes);

  int num_ps() const { return static_cast<int>(bytes_per_task_.size()); }
  // In the order Plan was given them.
  const std::vector<VariablePlacement>& variables() const { return variables_; }
  // nullptr for an unknown name.
  const VariablePlacement* Find(std::string_view name) const;
  // Index of `name` in variables(), or -1.
  int IndexOf(std::string_view name) const;
  const std::vector<int64_t>& bytes_per_task() const { return bytes_per_task_; }

 private:
  std::vector<VariablePlacement> variables_;
  absl::flat_hash_map<std::string, int> index_;
  std::vector<int64_t> bytes_per_task_;
};

}  // namespace tj
