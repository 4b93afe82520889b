#include "coordinator/ps/embedding_table.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/ps/id_hash.h"
#include "coordinator/ps/initializer.h"

namespace tj {
namespace {

static_assert(EmbeddingTable::kShards == 16, "ShardOf takes the top 4 bits of the hash");

// Rows per chunk aim at ~64 KiB chunks: large enough that malloc overhead vanishes, small enough
// that the partly filled last chunk of each shard wastes little.
constexpr size_t kChunkTargetBytes = 64 << 10;
constexpr int kMaxChunkShift = 10;
// Rows records stay around this size.
constexpr size_t kRowsRecordBytes = 4 << 20;

int ChunkShift(size_t stride) {
  int shift = 0;
  while (shift < kMaxChunkShift && (stride * sizeof(float)) << (shift + 1) <= kChunkTargetBytes) {
    ++shift;
  }
  return shift;
}

int64_t LoadId(const char* ids, size_t i) {
  int64_t id;
  std::memcpy(&id, ids + i * sizeof(int64_t), sizeof(int64_t));
  return id;
}

}  // namespace

EmbeddingTable::EmbeddingTable(TableConfig config)
    : config_(std::move(config)),
      stream_(InitializerStream(config_.initializer, config_.name)),
      row_floats_(static_cast<size_t>(config_.dim) *
                  (1 + static_cast<size_t>(config_.optimizer.num_slots()))),
      stride_(row_floats_ + (config_.optimizer.counts_steps() ? 2 : 0)),
      chunk_shift_(ChunkShift(stride_)),
      chunk_mask_((uint32_t{1} << chunk_shift_) - 1) {}

uint32_t EmbeddingTable::AppendRow(Shard& shard) {
  const uint32_t row = shard.num_rows++;
  if ((row >> chunk_shift_) == shard.chunks.size()) {
    shard.chunks.push_back(std::make_unique_for_overwrite<float[]>(stride_ << chunk_shift_));
  }
  return row;
}

float* EmbeddingTable::FindOrCreate(Shard& shard, int64_t id, uint64_t hash) {
  const auto [row, inserted] = shard.index.FindOrInsert(id, hash, shard.num_rows);
  if (!inserted) return Row(shard, row);
  AppendRow(shard);
  float* data = Row(shard, row);
  const size_t dim = static_cast<size_t>(config_.dim);
  FillInitialValues(config_.initializer, RowStream(stream_, id), 0, std::span<float>(data, dim));
  for (int s = 0; s < config_.optimizer.num_slots(); ++s) {
    std::fill_n(data + dim * static_cast<size_t>(1 + s), dim,
                config_.optimizer.slot_initial_value(s));
  }
  if (config_.optimizer.counts_steps()) SetRowStep(data, 0);
  return data;
}

int64_t EmbeddingTable::RowStep(const float* row) const {
  int64_t step;
  std::memcpy(&step, row + row_floats_, sizeof(step));
  return step;
}

void EmbeddingTable::SetRowStep(float* row, int64_t step) const {
  // Two floats' worth of bytes hold the int64: the row stays one contiguous block.
  std::memcpy(row + row_floats_, &step, sizeof(step));
}

void EmbeddingTable::Lookup(const char* ids, size_t n, char* out) {
  const size_t row_bytes = static_cast<size_t>(config_.dim) * sizeof(float);
  for (size_t i = 0; i < n; ++i) {
    const int64_t id = LoadId(ids, i);
    const uint64_t hash = RowHash(id);
    Shard& shard = ShardOf(hash);
    std::lock_guard lock(shard.mu);
    std::memcpy(out + i * row_bytes, FindOrCreate(shard, id, hash), row_bytes);
  }
}

void EmbeddingTable::ApplyToRow(int64_t id, const char* grad) {
  const uint64_t hash = RowHash(id);
  Shard& shard = ShardOf(hash);
  const size_t dim = static_cast<size_t>(config_.dim);
  std::lock_guard lock(shard.mu);
  float* row = FindOrCreate(shard, id, hash);
  const int slots = config_.optimizer.num_slots();
  const int64_t step = config_.optimizer.counts_steps() ? RowStep(row) : 0;
  ApplyUpdate(config_.optimizer, step, dim, grad, row, slots > 0 ? row + dim : nullptr,
              slots > 1 ? row + 2 * dim : nullptr);
  if (config_.optimizer.counts_steps()) SetRowStep(row, step + 1);
}

void EmbeddingTable::Push(const char* ids, size_t n, const char* grads) {
  const size_t dim = static_cast<size_t>(config_.dim);
  const size_t row_bytes = dim * sizeof(float);
  auto apply_each = [&] {
    for (size_t i = 0; i < n; ++i) ApplyToRow(LoadId(ids, i), grads + i * row_bytes);
  };
  // Under assign_add and SGD, applying a repeated id's gradients one by one equals applying their
  // sum (up to rounding order, which concurrent pushes leave open anyway): skip the dedup pass.
  const OptimizerKind kind = config_.optimizer.kind;
  if (kind == OptimizerKind::kAssignAdd || kind == OptimizerKind::kSgd) return apply_each();
  // Find repeated ids first; the common case has none and applies straight from the wire bytes.
  absl::flat_hash_map<int64_t, uint32_t> first_of;
  first_of.reserve(n);
  for (size_t i = 0; i < n; ++i) first_of.try_emplace(LoadId(ids, i), static_cast<uint32_t>(i));
  if (first_of.size() == n) return apply_each();
  // Sum the gradients of each distinct id into the slot of its first occurrence.
  std::vector<float> summed(n * dim);
  std::memcpy(summed.data(), grads, n * row_bytes);
  std::vector<bool> is_first(n, false);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t first = first_of[LoadId(ids, i)];
    if (first == i) {
      is_first[i] = true;
      continue;
    }
    for (size_t j = 0; j < dim; ++j) summed[first * dim + j] += summed[i * dim + j];
  }
  for (size_t i = 0; i < n; ++i) {
    if (is_first[i]) {
      ApplyToRow(LoadId(ids, i), reinterpret_cast<const char*>(summed.data() + i * dim));
    }
  }
}

int64_t EmbeddingTable::num_rows() const {
  int64_t rows = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard lock(shard.mu);
    rows += shard.num_rows;
  }
  return rows;
}

int64_t EmbeddingTable::memory_bytes() const {
  size_t bytes = 0;
  for (const Shard& shard : shards_) {
    std::lock_guard lock(shard.mu);
    bytes += shard.index.memory_bytes() +
             shard.chunks.size() * (stride_ << chunk_shift_) * sizeof(float) +
             shard.chunks.capacity() * sizeof(shard.chunks[0]);
  }
  return static_cast<int64_t>(bytes);
}

v1::TableSpec EmbeddingTable::ToSpec() const {
  v1::TableSpec spec;
  spec.set_name(config_.name);
  spec.set_dim(config_.dim);
  *spec.mutable_initializer() = config_.initializer;
  *spec.mutable_optimizer() = config_.optimizer.ToProto();
  return spec;
}

absl::Status EmbeddingTable::Export(StateWriter& writer) const {
  // Every shard stays locked for the whole export, so the table goes out as one snapshot whose row
  // count matches its rows even if lookups (which create rows) run meanwhile. Shards are locked in
  // index order, and nothing else ever holds two of them, so this cannot deadlock.
  std::array<std::unique_lock<std::mutex>, kShards> locks;
  int64_t total_rows = 0;
  for (int s = 0; s < kShards; ++s) {
    locks[static_cast<size_t>(s)] = std::unique_lock(shards_[static_cast<size_t>(s)].mu);
    total_rows += shards_[static_cast<size_t>(s)].num_rows;
  }
  v1::StateRecord record;
  v1::StateRecord::Table* table = record.mutable_table();
  *table->mutable_spec() = ToSpec();
  table->set_num_rows(total_rows);
  TJ_RETURN_IF_ERROR(writer.Write(record));

  const size_t row_bytes = row_floats_ * sizeof(float);
  const bool steps = config_.optimizer.counts_steps();
  v1::StateRecord::Rows* rows = record.mutable_rows();
  auto flush = [&]() -> absl::Status {
    if (rows->ids().empty()) return absl::OkStatus();
    TJ_RETURN_IF_ERROR(writer.Write(record));
    rows->clear_ids();
    rows->clear_data();
    rows->clear_steps();
    return absl::OkStatus();
  };
  for (const Shard& shard : shards_) {
    absl::Status status;
    shard.index.ForEach([&](int64_t id, uint32_t r) {
      if (!status.ok()) return;
      const float* row = Row(shard, r);
      rows->mutable_ids()->append(reinterpret_cast<const char*>(&id), sizeof(id));
      rows->mutable_data()->append(reinterpret_cast<const char*>(row), row_bytes);
      if (steps) {
        const int64_t step = RowStep(row);
        rows->mutable_steps()->append(reinterpret_cast<const char*>(&step), sizeof(step));
      }
      if (rows->data().size() >= kRowsRecordBytes) status = flush();
    });
    TJ_RETURN_IF_ERROR(status);
  }
  return flush();
}

void EmbeddingTable::ReserveRows(uint64_t n) {
  // Rows spread over the shards by hash: each gets about n / kShards, give or take a few standard
  // deviations (a shard that gets more grows as usual).
  const double per_shard = static_cast<double>(n) / kShards;
  const auto expected = static_cast<size_t>(per_shard + 4 * std::sqrt(per_shard));
  for (Shard& shard : shards_) {
    std::lock_guard lock(shard.mu);
    shard.index.Reserve(expected);
  }
}

absl::Status EmbeddingTable::ImportRows(const RowsView& rows) {
  const size_t n = rows.ids.size() / sizeof(int64_t);
  const size_t row_bytes = row_floats_ * sizeof(float);
  const bool steps = config_.optimizer.counts_steps();
  if (rows.ids.size() % sizeof(int64_t) != 0 || rows.data.size() != n * row_bytes ||
      rows.steps.size() != (steps ? n * sizeof(int64_t) : 0)) {
    return absl::DataLossError(absl::StrCat(
        "rows record of table '", config_.name, "' has ", rows.ids.size(), " bytes of ids, ",
        rows.data.size(), " of rows and ", rows.steps.size(), " of steps; a row is ", row_bytes,
        " bytes under ", config_.optimizer.ToString()));
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t id = LoadId(rows.ids.data(), i);
    const uint64_t hash = RowHash(id);
    Shard& shard = ShardOf(hash);
    std::lock_guard lock(shard.mu);
    const auto [row, inserted] = shard.index.FindOrInsert(id, hash, shard.num_rows);
    if (!inserted) {
      return absl::DataLossError(
          absl::StrCat("table '", config_.name, "' holds row ", id, " twice"));
    }
    AppendRow(shard);
    float* data = Row(shard, row);
    std::memcpy(data, rows.data.data() + i * row_bytes, row_bytes);
    if (steps) SetRowStep(data, LoadId(rows.steps.data(), i));
  }
  return absl::OkStatus();
}

}  // namespace tj
