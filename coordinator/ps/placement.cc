#include "coordinator/ps/placement.h"

#include <algorithm>
#include <numeric>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "coordinator/ps/variable_spec.h"

namespace tj {

absl::StatusOr<PsPlacement> PsPlacement::Plan(const std::vector<v1::VariableSpec>& variables,
                                              int num_ps, int64_t max_shard_bytes) {
  if (num_ps < 1) return absl::InvalidArgumentError("placement needs at least one PS task");
  if (max_shard_bytes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_shard_bytes must be positive, got ", max_shard_bytes));
  }
  PsPlacement placement;
  placement.bytes_per_task_.assign(static_cast<size_t>(num_ps), 0);
  std::vector<int64_t> num_shards;
  for (const v1::VariableSpec& spec : variables) {
    absl::StatusOr<DenseVariableConfig> config = CheckVariableSpec(spec);
    if (!config.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("variable '", spec.name(), "': ", config.status().message()));
    }
    if (config->spec.dtype != v1::DTYPE_FLOAT32) {
      return absl::InvalidArgumentError(
          absl::StrCat("variable '", spec.name(), "': only float32 variables are supported, got ",
                       config->spec.ToString()));
    }
    if (!placement.index_.emplace(spec.name(), static_cast<int>(placement.variables_.size()))
             .second) {
      return absl::InvalidArgumentError(
          absl::StrCat("variable '", spec.name(), "' is given twice"));
    }
    VariablePlacement& v = placement.variables_.emplace_back();
    v.name = spec.name();
    v.spec = config->spec;
    const int64_t bytes = v.spec.num_elements() * static_cast<int64_t>(sizeof(float));
    const int64_t rows = v.spec.shape.empty() ? 1 : v.spec.shape[0];
    int64_t k = 1;
    if (!v.spec.shape.empty() && bytes > max_shard_bytes) {
      k = std::min({int64_t{num_ps}, rows, (bytes + max_shard_bytes - 1) / max_shard_bytes});
      k = std::max(k, int64_t{1});
    }
    num_shards.push_back(k);
  }

  // Largest first, so that the greedy choice balances well; names break ties so that the result
  // does not depend on the order of the list.
  std::vector<size_t> order(placement.variables_.size());
  std::iota(order.begin(), order.end(), 0);
  auto bytes_of = [&](size_t i) { return placement.variables_[i].spec.num_elements(); };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (bytes_of(a) != bytes_of(b)) return bytes_of(a) > bytes_of(b);
    return placement.variables_[a].name < placement.variables_[b].name;
  });
  std::vector<int> tasks(static_cast<size_t>(num_ps));
  for (size_t i : order) {
    VariablePlacement& v = placement.variables_[i];
    const int64_t k = num_shards[i];
    std::iota(tasks.begin(), tasks.end(), 0);
    std::stable_sort(tasks.begin(), tasks.end(), [&](int a, int b) {
      return placement.bytes_per_task_[static_cast<size_t>(a)] <
             placement.bytes_per_task_[static_cast<size_t>(b)];
    });
    const int64_t rows = v.spec.shape.empty() ? 1 : v.spec.shape[0];
    const int64_t row_bytes =
        rows == 0 ? 0 : v.spec.num_elements() * static_cast<int64_t>(sizeof(float)) / rows;
    int64_t row = 0;
    for (int64_t s = 0; s < k; ++s) {
      VariableShard& shard = v.shards.emplace_back();
      shard.ps_task = tasks[static_cast<size_t>(s)];
      shard.ps_name = k == 1 ? v.name : absl::StrCat(v.name, "/part_", s);
      shard.row_begin = row;
      row += rows / k + (s < rows % k ? 1 : 0);
      shard.row_end = row;
      shard.num_bytes = (shard.row_end - shard.row_begin) * row_bytes;
      placement.bytes_per_task_[static_cast<size_t>(shard.ps_task)] += shard.num_bytes;
    }
  }

  // A split variable's shard names must not collide with another variable's name.
  absl::flat_hash_set<std::string> ps_names;
  for (const VariablePlacement& v : placement.variables_) {
    for (const VariableShard& shard : v.shards) {
      if (!ps_names.insert(absl::StrCat(shard.ps_task, "/", shard.ps_name)).second ||
          (v.split() && placement.index_.contains(shard.ps_name))) {
        return absl::InvalidArgumentError(absl::StrCat("variable '", v.name, "' shard '",
                                                       shard.ps_name,
                                                       "' collides with another variable's name"));
      }
    }
  }
  return placement;
}

const VariablePlacement* PsPlacement::Find(std::string_view name) const {
  const int i = IndexOf(name);
  return i < 0 ? nullptr : &variables_[static_cast<size_t>(i)];
}

int PsPlacement::IndexOf(std::string_view name) const {
  auto it = index_.find(absl::string_view(name.data(), name.size()));
  return it == index_.end() ? -1 : it->second;
}

}  // namespace tj
