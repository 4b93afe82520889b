// A sparse embedding table on one PS: int64 id -> float32 row of `dim`, created on first touch
// deterministically from (seed, table name, id), so any PS creates the same row, and updated in
// place by the table's optimizer (lazy Adam: each row counts its own steps).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/base/std_mutex.h"
#include "coordinator/ps/page_array.h"
#include "coordinator/ps/row_index.h"
#include "coordinator/ps/state_stream.h"
#include "coordinator/ps/variable_spec.h"
#include "tj/v1/ps.pb.h"

namespace tj {

// Thread-safe. Rows are spread over kShards shards by RowHash, each with its own lock, index and
// row storage, so concurrent lookups and pushes mostly touch different locks. A row lives in chunks
// of contiguous floats: its id as an int64 (the index keeps only row numbers), its values, then its
// optimizer slots, then (lazy Adam) its step as an int64.
class EmbeddingTable {
 public:
  static constexpr int kShards = 16;
  // Rows a table may hold: far below what kShards indexes can (kShards x RowIndex::kMaxRows, with
  // the hash spreading rows evenly), and 64 GiB of dimension-16 values. VariableStore refuses a
  // lookup or push that could create more.
  static constexpr int64_t kMaxRows = int64_t{1} << 30;

  explicit EmbeddingTable(TableConfig config);

  EmbeddingTable(const EmbeddingTable&) = delete;
  EmbeddingTable& operator=(const EmbeddingTable&) = delete;

  const TableConfig& config() const { return config_; }
  const std::string& name() const { return config_.name; }
  int64_t dim() const { return config_.dim; }

  // Copies the rows of the `n` int64s at `ids` (unaligned) to `out`, n * dim floats, creating the
  // rows that do not exist yet. Returns how many rows it created; ResourceExhausted (after the
  // rows before it) for an id whose row shard is full (RowIndex::kMaxRows).
  absl::StatusOr<size_t> Lookup(const char* ids, size_t n, char* out);

  // Applies n rows of gradients (n * dim unaligned floats, already checked finite) to the rows of
  // `ids`, creating missing rows first. Gradients of a repeated id are summed and applied once, as
  // TensorFlow does for sparse updates, so the row takes one optimizer step. Returns how many rows
  // it created; ResourceExhausted as Lookup's.
  absl::StatusOr<size_t> Push(const char* ids, size_t n, const char* grads);

  // How many distinct ids among the `n` at `ids` have no row yet (a moment's answer: concurrent
  // calls may create some meanwhile).
  size_t CountMissing(const char* ids, size_t n) const;

  int64_t num_rows() const;
  // Bytes held by rows, indexes and change bits, for memory accounting.
  int64_t memory_bytes() const;
  // What one more row costs at most: its storage, the index at its lowest load, the change bits.
  int64_t bytes_per_row() const;

  // A Table record, then Rows records of ~4 MiB: one consistent snapshot of the table's rows
  // `which` selects (lookups and pushes to it wait meanwhile). A snapshot of fewer than all rows
  // records in its Table record how many rows follow (`changed_rows`); `num_rows` is always the
  // table's size. Once written, the rows count as exported when `mark_exported` (a checkpoint save;
  // see RowsToExport).
  absl::Status Export(StateWriter& writer, RowsToExport which = RowsToExport::kAll,
                      bool mark_exported = false) const;
  // Adds the rows of one Rows record. DataLoss for sizes that do not fit the table or, unless
  // `replace` (the rows of a delta), an id seen before. Only for a table not yet shared with other
  // threads.
  absl::Status ImportRows(const RowsView& rows, bool replace = false);
  // Sizes the row indexes for `n` rows in all (a restore of a full save, from the Table record's
  // row count), so that importing them never rebuilds an index. Only for a table not yet shared.
  void ReserveRows(uint64_t n);
  // Bytes of one row as exported (values and slots, and the step for lazy Adam).
  size_t row_bytes() const {
    return row_floats_ * sizeof(float) + (config_.optimizer.counts_steps() ? sizeof(int64_t) : 0);
  }
  // The TableSpec this table was created from, with the optimizer's defaults written out.
  v1::TableSpec ToSpec() const;

 private:
  // A StdMutex rather than absl::Mutex so that TSan sees it (docs/decisions.md); the same cost as
  // the std::mutex it wraps.
  struct Shard {
    mutable StdMutex mu;
    RowIndex index ABSL_GUARDED_BY(mu);  // index.size() rows
    std::vector<PageArray<float>> chunks ABSL_GUARDED_BY(mu);
    // One bit a row (RowsToExport): changed since the last export; changed before it since the
    // export before. Bookkeeping of checkpoints, not state: an export (const) updates them.
    mutable std::vector<uint64_t> changed ABSL_GUARDED_BY(mu);
    mutable std::vector<uint64_t> changed_before ABSL_GUARDED_BY(mu);
  };

  Shard& ShardOf(uint64_t hash) { return shards_[hash >> 60]; }
  const Shard& ShardOf(uint64_t hash) const { return shards_[hash >> 60]; }
  // The block of row `row`: its id (2 floats' worth), then what a row exports.
  float* Block(const Shard& shard, uint32_t row) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu) {
    return shard.chunks[row >> chunk_shift_].get() +
           static_cast<size_t>(row & chunk_mask_) * stride_;
  }
  float* Row(const Shard& shard, uint32_t row) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu) {
    return Block(shard, row) + kIdFloats;
  }
  int64_t IdOf(const Shard& shard, uint32_t row) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);
  // IdOf(shard, ·) for RowIndex, which calls it back while the caller holds the shard's lock (the
  // analysis cannot follow the lock into RowIndex's templates, so the lambda is not checked).
  auto IdsOf(const Shard& shard) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu) {
    return [this, &shard](uint32_t r) ABSL_NO_THREAD_SAFETY_ANALYSIS { return IdOf(shard, r); };
  }
  // The row of `id` in `shard` (whose lock the caller holds), created and initialized if absent;
  // `created` is incremented for a new row. Marks the row changed when `will_change` or created.
  // nullptr when the row is absent and the shard holds RowIndex::kMaxRows rows.
  float* FindOrCreate(Shard& shard, int64_t id, uint64_t hash, bool will_change, size_t& created)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);
  // Storage for row `row` (the index's next row) holding `id`, allocating a chunk when needed.
  float* AppendRow(Shard& shard, uint32_t row, int64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);
  static void MarkChanged(Shard& shard, uint32_t row) ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu);
  int64_t RowStep(const float* row) const;
  void SetRowStep(float* row, int64_t step) const;
  absl::StatusOr<size_t> ApplyToRow(int64_t id, const char* grad);
  absl::Status ShardFullError(int64_t id) const;

  static constexpr size_t kIdFloats = 2;

  const TableConfig config_;
  const uint64_t stream_;    // the initializer stream of the table
  const size_t row_floats_;  // dim * (1 + slots): what a row exports
  const size_t stride_;      // the id's 2 floats, row_floats_, and 2 more for lazy Adam's step
  const int chunk_shift_;    // rows per chunk = 1 << chunk_shift_
  const uint32_t chunk_mask_;
  std::array<Shard, kShards> shards_;
};

}  // namespace tj
