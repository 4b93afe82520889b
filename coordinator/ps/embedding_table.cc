#include "coordinator/ps/embedding_table.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <span>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/ps/id_hash.h"
#include "coordinator/ps/initializer.h"

namespace tj {
namespace {

static_assert(EmbeddingTable::kShards == 16, "ShardOf takes the top 4 bits of the hash");

// Rows per chunk aim at ~1 MiB chunks of mapped memory (PageArray): few mappings, and the partly
// filled last chunk of each shard costs only the pages its rows touched.
constexpr size_t kChunkTargetBytes = 1 << 20;
constexpr int kMaxChunkShift = 16;
// How far a lookup of many ids probes ahead: home slots 2 x this many ids ahead, rows this many.
constexpr size_t kAhead = 8;
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

// Ids grouped by the row shard their hash picks, in their given order within each shard (so a
// later copy of an id still comes after an earlier one): a pass over many ids then takes each
// shard's lock once and can prefetch the index slots of the ids ahead of the one it probes.
struct IdsByShard {
  std::vector<uint64_t> hashes;  // RowHash of id i
  std::vector<uint32_t> order;   // positions of the ids, shard by shard
  std::array<uint32_t, EmbeddingTable::kShards + 1> begin{};  // shard s: order[begin[s], begin[s+1])
};

IdsByShard GroupByShard(const char* ids, size_t n) {
  IdsByShard groups;
  groups.hashes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    groups.hashes[i] = RowHash(LoadId(ids, i));
    ++groups.begin[(groups.hashes[i] >> 60) + 1];
  }
  for (int s = 0; s < EmbeddingTable::kShards; ++s) groups.begin[s + 1] += groups.begin[s];
  groups.order.resize(n);
  std::array<uint32_t, EmbeddingTable::kShards> next;
  std::copy_n(groups.begin.begin(), EmbeddingTable::kShards, next.begin());
  for (size_t i = 0; i < n; ++i) {
    groups.order[next[groups.hashes[i] >> 60]++] = static_cast<uint32_t>(i);
  }
  return groups;
}

}  // namespace

EmbeddingTable::EmbeddingTable(TableConfig config)
    : config_(std::move(config)),
      stream_(InitializerStream(config_.initializer, config_.name)),
      row_floats_(static_cast<size_t>(config_.dim) *
                  (1 + static_cast<size_t>(config_.optimizer.num_slots()))),
      stride_(kIdFloats + row_floats_ + (config_.optimizer.counts_steps() ? 2 : 0)),
      chunk_shift_(ChunkShift(stride_)),
      chunk_mask_((uint32_t{1} << chunk_shift_) - 1) {}

int64_t EmbeddingTable::IdOf(const Shard& shard, uint32_t row) const {
  int64_t id;
  std::memcpy(&id, Block(shard, row), sizeof(id));
  return id;
}

float* EmbeddingTable::AppendRow(Shard& shard, uint32_t row, int64_t id) {
  if ((row >> chunk_shift_) == shard.chunks.size()) {
    shard.chunks.emplace_back(stride_ << chunk_shift_);
  }
  if ((row >> 6) == shard.changed.size()) {
    shard.changed.push_back(0);
    shard.changed_before.push_back(0);
  }
  float* block = Block(shard, row);
  std::memcpy(block, &id, sizeof(id));
  return block + kIdFloats;
}

void EmbeddingTable::MarkChanged(Shard& shard, uint32_t row) {
  shard.changed[row >> 6] |= uint64_t{1} << (row & 63);
}

float* EmbeddingTable::FindOrCreate(Shard& shard, int64_t id, uint64_t hash, bool will_change,
                                    size_t& created) {
  const auto id_of = IdsOf(shard);
  if (shard.index.size() >= RowIndex::kMaxRows) {
    // Only ids chosen to land in one shard get here (kMaxRows rows a table is 8 times fewer).
    const uint32_t found = shard.index.Find(id, hash, id_of);
    if (found == RowIndex::kNoRow) return nullptr;
    if (will_change) MarkChanged(shard, found);
    return Row(shard, found);
  }
  const auto [row, inserted] = shard.index.FindOrInsert(id, hash, id_of);
  if (!inserted) {
    if (will_change) MarkChanged(shard, row);
    return Row(shard, row);
  }
  ++created;
  float* data = AppendRow(shard, row, id);
  MarkChanged(shard, row);
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

absl::Status EmbeddingTable::ShardFullError(int64_t id) const {
  return absl::ResourceExhaustedError(
      absl::StrCat("table '", config_.name, "': no room for row ", id, ": its row shard holds ",
                   RowIndex::kMaxRows, " rows (the ids are not spread over the table's shards)"));
}

absl::StatusOr<size_t> EmbeddingTable::Lookup(const char* ids, size_t n, char* out) {
  const size_t row_bytes = static_cast<size_t>(config_.dim) * sizeof(float);
  size_t created = 0;
  // Most of a lookup's time is two cache misses per id (its index slot, then its row). Ids are
  // therefore grouped by row shard, each shard's lock taken once, and under it the home slots of
  // ids ahead and then their likely rows are prefetched, so the misses of several ids overlap.
  const IdsByShard groups = GroupByShard(ids, n);
  const std::vector<uint64_t>& hashes = groups.hashes;
  const std::vector<uint32_t>& order = groups.order;
  const auto& begin = groups.begin;
  for (size_t s = 0; s < kShards; ++s) {
    if (begin[s] == begin[s + 1]) continue;
    Shard& shard = shards_[s];
    StdMutexLock lock(shard.mu);
    const size_t end = begin[s + 1];
    for (size_t k = begin[s]; k < end; ++k) {
      if (k + 2 * kAhead < end) shard.index.Prefetch(hashes[order[k + 2 * kAhead]]);
      if (k + kAhead < end) {
        const uint32_t row = shard.index.Candidate(hashes[order[k + kAhead]]);
        if (row != RowIndex::kNoRow) {
          const float* block = Block(shard, row);
          __builtin_prefetch(block);
          __builtin_prefetch(block + stride_ - 1);
        }
      }
      const size_t i = order[k];
      const int64_t id = LoadId(ids, i);
      const float* row = FindOrCreate(shard, id, hashes[i], false, created);
      if (row == nullptr) return ShardFullError(id);
      std::memcpy(out + i * row_bytes, row, row_bytes);
    }
  }
  return created;
}

size_t EmbeddingTable::CountMissing(const char* ids, size_t n) const {
  absl::flat_hash_set<int64_t> missing;
  for (size_t i = 0; i < n; ++i) {
    const int64_t id = LoadId(ids, i);
    const uint64_t hash = RowHash(id);
    const Shard& shard = ShardOf(hash);
    StdMutexLock lock(shard.mu);
    if (shard.index.Find(id, hash, IdsOf(shard)) == RowIndex::kNoRow) {
      missing.insert(id);
    }
  }
  return missing.size();
}

absl::StatusOr<size_t> EmbeddingTable::ApplyToRow(int64_t id, const char* grad) {
  const uint64_t hash = RowHash(id);
  Shard& shard = ShardOf(hash);
  const size_t dim = static_cast<size_t>(config_.dim);
  StdMutexLock lock(shard.mu);
  size_t created = 0;
  float* row = FindOrCreate(shard, id, hash, true, created);
  if (row == nullptr) return ShardFullError(id);
  const int slots = config_.optimizer.num_slots();
  const int64_t step = config_.optimizer.counts_steps() ? RowStep(row) : 0;
  ApplyUpdate(config_.optimizer, step, dim, grad, row, slots > 0 ? row + dim : nullptr,
              slots > 1 ? row + 2 * dim : nullptr);
  if (config_.optimizer.counts_steps()) SetRowStep(row, step + 1);
  return created;
}

absl::StatusOr<size_t> EmbeddingTable::Push(const char* ids, size_t n, const char* grads) {
  const size_t dim = static_cast<size_t>(config_.dim);
  const size_t row_bytes = dim * sizeof(float);
  size_t created = 0;
  auto apply_each = [&]() -> absl::StatusOr<size_t> {
    for (size_t i = 0; i < n; ++i) {
      TJ_ASSIGN_OR_RETURN(const size_t one, ApplyToRow(LoadId(ids, i), grads + i * row_bytes));
      created += one;
    }
    return created;
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
    if (!is_first[i]) continue;
    TJ_ASSIGN_OR_RETURN(
        const size_t one,
        ApplyToRow(LoadId(ids, i), reinterpret_cast<const char*>(summed.data() + i * dim)));
    created += one;
  }
  return created;
}

int64_t EmbeddingTable::num_rows() const {
  int64_t rows = 0;
  for (const Shard& shard : shards_) {
    StdMutexLock lock(shard.mu);
    rows += static_cast<int64_t>(shard.index.size());
  }
  return rows;
}

int64_t EmbeddingTable::memory_bytes() const {
  size_t bytes = 0;
  for (const Shard& shard : shards_) {
    StdMutexLock lock(shard.mu);
    bytes += shard.index.memory_bytes() +
             // Mapped chunks hold pages only where rows were written.
             shard.index.size() * stride_ * sizeof(float) +
             shard.chunks.capacity() * sizeof(shard.chunks[0]) +
             (shard.changed.capacity() + shard.changed_before.capacity()) * sizeof(uint64_t);
  }
  return static_cast<int64_t>(bytes);
}

int64_t EmbeddingTable::bytes_per_row() const {
  // Index: 4 bytes a slot at a load of 8/15 at least (RowIndex); change bits: 2 bits, rounded up.
  return static_cast<int64_t>(stride_ * sizeof(float)) + 8 + 1;
}

v1::TableSpec EmbeddingTable::ToSpec() const {
  v1::TableSpec spec;
  spec.set_name(config_.name);
  spec.set_dim(config_.dim);
  *spec.mutable_initializer() = config_.initializer;
  *spec.mutable_optimizer() = config_.optimizer.ToProto();
  return spec;
}

namespace {

// Whether bit `row` is set in `which`'s selection of a shard's change bits.
bool Selected(RowsToExport which, const std::vector<uint64_t>& changed,
              const std::vector<uint64_t>& changed_before, uint32_t row) {
  const uint64_t bit = uint64_t{1} << (row & 63);
  switch (which) {
    case RowsToExport::kAll:
      return true;
    case RowsToExport::kChangedSinceLast:
      return (changed[row >> 6] & bit) != 0;
    case RowsToExport::kChangedSincePrevious:
      return ((changed[row >> 6] | changed_before[row >> 6]) & bit) != 0;
  }
  return true;
}

}  // namespace

// Every shard stays locked for the whole export, so the table goes out as one snapshot whose row
// count matches its rows even if lookups (which create rows) run meanwhile. Shards are locked in
// index order, and nothing else ever holds two of them, so this cannot deadlock. Not checked by
// the thread-safety analysis, which cannot follow locks taken in a loop; every access below is
// after the loop that takes them all.
absl::Status EmbeddingTable::Export(StateWriter& writer, RowsToExport which,
                                    bool mark_exported) const ABSL_NO_THREAD_SAFETY_ANALYSIS {
  std::array<std::unique_lock<StdMutex>, kShards> locks;
  int64_t total_rows = 0;
  int64_t selected_rows = 0;
  for (int s = 0; s < kShards; ++s) {
    const Shard& shard = shards_[static_cast<size_t>(s)];
    locks[static_cast<size_t>(s)] = std::unique_lock(shard.mu);
    total_rows += static_cast<int64_t>(shard.index.size());
    for (size_t w = 0; w < shard.changed.size(); ++w) {
      const uint64_t bits = which == RowsToExport::kChangedSinceLast
                                ? shard.changed[w]
                                : shard.changed[w] | shard.changed_before[w];
      selected_rows += std::popcount(bits);
    }
  }
  if (which == RowsToExport::kAll) selected_rows = total_rows;
  v1::StateRecord record;
  v1::StateRecord::Table* table = record.mutable_table();
  *table->mutable_spec() = ToSpec();
  table->set_num_rows(total_rows);
  if (which != RowsToExport::kAll) table->set_changed_rows(selected_rows);
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
  // Rows go out in row order: sequential reads of the row storage.
  for (const Shard& shard : shards_) {
    const auto n = static_cast<uint32_t>(shard.index.size());
    for (uint32_t r = 0; r < n; ++r) {
      if (!Selected(which, shard.changed, shard.changed_before, r)) continue;
      const float* block = Block(shard, r);
      const float* row = block + kIdFloats;
      rows->mutable_ids()->append(reinterpret_cast<const char*>(block), sizeof(int64_t));
      rows->mutable_data()->append(reinterpret_cast<const char*>(row), row_bytes);
      if (steps) {
        const int64_t step = RowStep(row);
        rows->mutable_steps()->append(reinterpret_cast<const char*>(&step), sizeof(step));
      }
      if (rows->data().size() >= kRowsRecordBytes) TJ_RETURN_IF_ERROR(flush());
    }
  }
  TJ_RETURN_IF_ERROR(flush());
  if (!mark_exported) return absl::OkStatus();
  // Written whole: the rows count as exported. On an error above nothing is marked, so the next
  // export writes them again (more rows than needed is harmless, fewer would lose updates).
  for (const Shard& shard : shards_) {
    for (size_t w = 0; w < shard.changed.size(); ++w) {
      switch (which) {
        case RowsToExport::kAll:
          shard.changed_before[w] = 0;
          break;
        case RowsToExport::kChangedSinceLast:
          shard.changed_before[w] = shard.changed[w];
          break;
        case RowsToExport::kChangedSincePrevious:
          shard.changed_before[w] |= shard.changed[w];
          break;
      }
      shard.changed[w] = 0;
    }
  }
  return absl::OkStatus();
}

void EmbeddingTable::ReserveRows(uint64_t n) {
  // Rows spread over the shards by hash: each gets about n / kShards, give or take a few standard
  // deviations (a shard that gets more grows as usual). No shard holds more than kMaxRows.
  const double per_shard = static_cast<double>(n) / kShards;
  const auto expected = std::min<size_t>(static_cast<size_t>(per_shard + 4 * std::sqrt(per_shard)),
                                         RowIndex::kMaxRows);
  for (Shard& shard : shards_) {
    StdMutexLock lock(shard.mu);
    shard.index.Reserve(expected, IdsOf(shard));
  }
}

absl::Status EmbeddingTable::ImportRows(const RowsView& rows, bool replace) {
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
  // A restore's time is mostly one cache miss per row, in the index slot its insert probes (the
  // rows themselves are appended in order): grouped by shard, the slots of the rows ahead are
  // prefetched so that those misses overlap, as Lookup does.
  const IdsByShard groups = GroupByShard(rows.ids.data(), n);
  for (size_t s = 0; s < kShards; ++s) {
    const size_t end = groups.begin[s + 1];
    if (groups.begin[s] == end) continue;
    Shard& shard = shards_[s];
    StdMutexLock lock(shard.mu);
    const auto id_of = IdsOf(shard);
    for (size_t k = groups.begin[s]; k < end; ++k) {
      if (k + kAhead < end) shard.index.Prefetch(groups.hashes[groups.order[k + kAhead]]);
      const size_t i = groups.order[k];
      const int64_t id = LoadId(rows.ids.data(), i);
      if (shard.index.size() >= RowIndex::kMaxRows) {
        return absl::DataLossError(
            absl::StrCat("table '", config_.name, "' has more than ", kMaxRows, " rows"));
      }
      const auto [row, inserted] = shard.index.FindOrInsert(id, groups.hashes[i], id_of);
      if (!inserted && !replace) {
        return absl::DataLossError(
            absl::StrCat("table '", config_.name, "' holds row ", id, " twice"));
      }
      float* data = inserted ? AppendRow(shard, row, id) : Row(shard, row);
      std::memcpy(data, rows.data.data() + i * row_bytes, row_bytes);
      if (steps) SetRowStep(data, LoadId(rows.steps.data(), i));
    }
  }
  return absl::OkStatus();
}

}  // namespace tj
