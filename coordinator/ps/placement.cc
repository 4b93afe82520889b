#include "coordinator/ps/placement.h"

#include <algorithm>
#include <numeric>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "coordinator/ps/variable_spec.h"

namespace tj {
namespace {

int64_t RowsOf(const TensorSpec& spec) { return spec.shape.empty() ? 1 : spec.shape[0]; }

int64_t BytesOf(const TensorSpec& spec) {
  return spec.num_elements() * static_cast<int64_t>(sizeof(float));
}

int64_t RowBytesOf(const TensorSpec& spec) {
  const int64_t rows = RowsOf(spec);
  return rows == 0 ? 0 : BytesOf(spec) / rows;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// "123", "64KiB", "16MiB", "1GiB" (also KB/MB/GB, read as powers of two).
bool ParseBytes(std::string_view text, int64_t& out) {
  int shift = 0;
  for (const auto& [suffix, s] : {std::pair{"KiB", 10},
                                  {"MiB", 20},
                                  {"GiB", 30},
                                  {"KB", 10},
                                  {"MB", 20},
                                  {"GB", 30},
                                  {"K", 10},
                                  {"M", 20},
                                  {"G", 30}}) {
    const std::string_view sv(suffix);
    if (text.size() > sv.size() && text.substr(text.size() - sv.size()) == sv) {
      text.remove_suffix(sv.size());
      shift = s;
      break;
    }
  }
  int64_t value = 0;
  if (!absl::SimpleAtoi(absl::string_view(text.data(), text.size()), &value) || value < 0 ||
      value > (INT64_MAX >> shift)) {
    return false;
  }
  out = value << shift;
  return true;
}

}  // namespace

absl::StatusOr<PartitionerConfig> PartitionerConfig::Parse(std::string_view text) {
  const std::vector<std::string> parts =
      absl::StrSplit(absl::string_view(text.data(), text.size()), ':');
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "partitioner '", std::string(text), "': ", std::string(why),
        " (expected min_size:<bytes>[:<max_shards>], max_size:<bytes>[:<max_shards>] or "
        "fixed:<shards>)"));
  };
  PartitionerConfig config;
  if (parts[0] == "fixed") {
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &config.num_shards)) {
      return bad("fixed takes one number of shards");
    }
    config.kind = PartitionerKind::kFixedShards;
    config.shard_bytes = 0;
  } else if (parts[0] == "min_size" || parts[0] == "max_size") {
    config.kind = parts[0] == "min_size" ? PartitionerKind::kMinSize : PartitionerKind::kMaxSize;
    if (parts.size() < 2 || parts.size() > 3 || !ParseBytes(parts[1], config.shard_bytes)) {
      return bad("a size in bytes is needed");
    }
    if (parts.size() == 3 && !absl::SimpleAtoi(parts[2], &config.max_shards)) {
      return bad("max_shards is not a number");
    }
  } else {
    return bad("unknown kind");
  }
  if (absl::Status status = config.Check(); !status.ok()) return bad(std::string(status.message()));
  return config;
}

std::string PartitionerConfig::ToString() const {
  switch (kind) {
    case PartitionerKind::kFixedShards:
      return absl::StrCat("fixed:", num_shards);
    case PartitionerKind::kMinSize:
      return absl::StrCat("min_size:", shard_bytes, ":", max_shards);
    case PartitionerKind::kMaxSize:
      return absl::StrCat("max_size:", shard_bytes, ":", max_shards);
  }
  return "unknown";
}

absl::Status PartitionerConfig::Check() const {
  if (kind == PartitionerKind::kFixedShards) {
    if (num_shards < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("the number of shards must be positive, got ", num_shards));
    }
    return absl::OkStatus();
  }
  if (shard_bytes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the shard size must be positive, got ", shard_bytes));
  }
  if (max_shards < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_shards must be 0 (no limit) or positive, got ", max_shards));
  }
  return absl::OkStatus();
}

int64_t PartitionerConfig::NumShards(const TensorSpec& spec, int num_ps) const {
  if (spec.shape.empty()) return 1;
  const int64_t rows = RowsOf(spec);
  if (rows <= 1) return 1;
  const int64_t bytes = BytesOf(spec);
  int64_t shards = 1;
  switch (kind) {
    case PartitionerKind::kFixedShards:
      shards = num_shards;
      break;
    case PartitionerKind::kMinSize:
      shards = std::min(max_shards > 0 ? max_shards : int64_t{num_ps}, CeilDiv(bytes, shard_bytes));
      break;
    case PartitionerKind::kMaxSize: {
      const int64_t row_bytes = RowBytesOf(spec);
      const int64_t rows_per_shard =
          row_bytes == 0 ? rows : std::max<int64_t>(1, shard_bytes / row_bytes);
      shards = CeilDiv(rows, rows_per_shard);
      if (max_shards > 0) shards = std::min(shards, max_shards);
      break;
    }
  }
  return std::clamp<int64_t>(shards, 1, rows);
}

absl::StatusOr<PsPlacement> PsPlacement::Plan(const std::vector<v1::VariableSpec>& variables,
                                              int num_ps, const PlacementOptions& options) {
  if (num_ps < 1) return absl::InvalidArgumentError("placement needs at least one PS task");
  if (absl::Status status = options.partitioner.Check(); !status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("partitioner ", options.partitioner.ToString(), ": ", status.message()));
  }
  if (options.max_slice_bytes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_slice_bytes must be positive, got ", options.max_slice_bytes));
  }
  PsPlacement placement;
  placement.options_ = options;
  placement.bytes_per_task_.assign(static_cast<size_t>(num_ps), 0);
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
    v.num_bytes = BytesOf(v.spec);
    v.num_shards = options.partitioner.NumShards(v.spec, num_ps);
    const int64_t row_bytes = RowBytesOf(v.spec);
    if (row_bytes > options.max_slice_bytes && v.num_bytes > options.max_slice_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable '", v.name, "' ", v.spec.ToString(), ": one row of dimension 0 is ", row_bytes,
          " bytes, more than the largest slice an RPC may carry (", options.max_slice_bytes,
          " bytes); variables are split along dimension 0 only"));
    }
  }

  // Largest first, so that the greedy choice balances well; names break ties so that the result
  // does not depend on the order of the list.
  std::vector<size_t> order(placement.variables_.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const VariablePlacement& va = placement.variables_[a];
    const VariablePlacement& vb = placement.variables_[b];
    if (va.num_bytes != vb.num_bytes) return va.num_bytes > vb.num_bytes;
    return va.name < vb.name;
  });
  std::vector<int64_t> shards_here(static_cast<size_t>(num_ps));
  for (size_t i : order) {
    VariablePlacement& v = placement.variables_[i];
    const int64_t rows = RowsOf(v.spec);
    const int64_t row_bytes = RowBytesOf(v.spec);
    // Rows per slice such that no slice exceeds max_slice_bytes (at least one row).
    const int64_t rows_per_slice = row_bytes == 0
                                       ? std::max<int64_t>(rows, 1)
                                       : std::max<int64_t>(1, options.max_slice_bytes / row_bytes);
    std::fill(shards_here.begin(), shards_here.end(), 0);
    int64_t row = 0;
    for (int64_t s = 0; s < v.num_shards; ++s) {
      // TensorFlow's split: rows / k each, the first rows % k shards one more.
      const int64_t shard_rows = rows / v.num_shards + (s < rows % v.num_shards ? 1 : 0);
      int task = 0;
      for (int t = 1; t < num_ps; ++t) {
        const auto better = [&](int a, int b) {
          if (shards_here[static_cast<size_t>(a)] != shards_here[static_cast<size_t>(b)]) {
            return shards_here[static_cast<size_t>(a)] < shards_here[static_cast<size_t>(b)];
          }
          return placement.bytes_per_task_[static_cast<size_t>(a)] <
                 placement.bytes_per_task_[static_cast<size_t>(b)];
        };
        if (better(t, task)) task = t;
      }
      ++shards_here[static_cast<size_t>(task)];
      const int64_t num_slices = std::max<int64_t>(1, CeilDiv(shard_rows, rows_per_slice));
      for (int64_t k = 0; k < num_slices; ++k) {
        VariableSlice& slice = v.slices.emplace_back();
        slice.ps_task = task;
        slice.shard = static_cast<int>(s);
        slice.row_begin = row;
        row += shard_rows / num_slices + (k < shard_rows % num_slices ? 1 : 0);
        slice.row_end = row;
        slice.num_bytes =
            v.spec.shape.empty() ? v.num_bytes : (slice.row_end - slice.row_begin) * row_bytes;
        slice.byte_offset = slice.row_begin * row_bytes;
        placement.bytes_per_task_[static_cast<size_t>(task)] += slice.num_bytes;
      }
    }
    for (size_t k = 0; k < v.slices.size(); ++k) {
      v.slices[k].ps_name = v.slices.size() == 1 ? v.name : absl::StrCat(v.name, "/part_", k);
    }
  }

  // A split variable's slice names must not collide with another variable's name.
  absl::flat_hash_set<std::string> ps_names;
  for (const VariablePlacement& v : placement.variables_) {
    for (const VariableSlice& slice : v.slices) {
      if (!ps_names.insert(absl::StrCat(slice.ps_task, "/", slice.ps_name)).second ||
          (v.split() && placement.index_.contains(slice.ps_name))) {
        return absl::InvalidArgumentError(absl::StrCat("variable '", v.name, "' slice '",
                                                       slice.ps_name,
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
