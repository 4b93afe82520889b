// A sparse embedding table on one PS: int64 id -> float32 row of `dim`, created on first touch
// deterministically from (seed, table name, id), so any PS creates the same row, and updated in
// place by the table's optimizer (lazy Adam: each row counts its own steps).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "coordinator/ps/row_index.h"
#include "coordinator/ps/state_stream.h"
#include "coordinator/ps/variable_spec.h"
#include "tj/v1/ps.pb.h"

namespace tj {

// Thread-safe. Rows are spread over kShards shards by RowHash, each with its own lock, index and
// row storage, so concurrent lookups and pushes mostly touch different locks. A row lives in chunks
// of contiguous floats: its values, then its optimizer slots, then (lazy Adam) its step as an
// int64.
class EmbeddingTable {
 public:
  static constexpr int kShards = 16;

  explicit EmbeddingTable(TableConfig config);

  EmbeddingTable(const EmbeddingTable&) = delete;
  EmbeddingTable& operator=(const EmbeddingTable&) = delete;

  const TableConfig& config() const { return config_; }
  const std::string& name() const { return config_.name; }
  int64_t dim() const { return config_.dim; }

  // Copies the rows of the `n` int64s at `ids` (unaligned) to `out`, n * dim floats, creating the
  // rows that do not exist yet.
  void Lookup(const char* ids, size_t n, char* out);

  // Applies n rows of gradients (n * dim unaligned floats, already checked finite) to the rows of
  // `ids`, creating missing rows first. Gradients of a repeated id are summed and applied once, as
  // TensorFlow does for sparse updates, so the row takes one optimizer step.
  void Push(const char* ids, size_t n, const char* grads);

  int64_t num_rows() const;
  // Bytes held by row storage and indexes, for memory accounting.
  int64_t memory_bytes() const;

  // A Table record, then Rows records of ~4 MiB: one consistent snapshot of the table (lookups and
  // pushes to it wait meanwhile).
  absl::Status Export(StateWriter& writer) const;
  // Adds the rows of one Rows record. DataLoss for sizes that do not fit the table or an id seen
  // before. Only for a table not yet shared with other threads.
  absl::Status ImportRows(const RowsView& rows);
  // Sizes the row indexes for `n` rows in all (a restore, from the Table record's row count), so
  // that importing them never rehashes.
  void ReserveRows(uint64_t n);
  // Bytes of one row as exported (values and slots, and the step for lazy Adam).
  size_t row_bytes() const {
    return row_floats_ * sizeof(float) + (config_.optimizer.counts_steps() ? sizeof(int64_t) : 0);
  }
  // The TableSpec this table was created from, with the optimizer's defaults written out.
  v1::TableSpec ToSpec() const;

 private:
  struct Shard {
    mutable std::mutex mu;
    RowIndex index;                                // guarded by mu
    std::vector<std::unique_ptr<float[]>> chunks;  // guarded by mu
    uint32_t num_rows = 0;                         // guarded by mu
  };

  Shard& ShardOf(uint64_t hash) { return shards_[hash >> 60]; }
  float* Row(const Shard& shard, uint32_t row) const {
    return shard.chunks[row >> chunk_shift_].get() +
           static_cast<size_t>(row & chunk_mask_) * stride_;
  }
  // The row of `id` in `shard` (whose lock the caller holds), created and initialized if absent.
  float* FindOrCreate(Shard& shard, int64_t id, uint64_t hash);
  // A fresh row slot in `shard`, allocating a chunk when the last one is full.
  uint32_t AppendRow(Shard& shard);
  int64_t RowStep(const float* row) const;
  void SetRowStep(float* row, int64_t step) const;
  void ApplyToRow(int64_t id, const char* grad);

  const TableConfig config_;
  const uint64_t stream_;    // the initializer stream of the table
  const size_t row_floats_;  // dim * (1 + slots): what a row exports
  const size_t stride_;      // row_floats_, plus 2 floats holding the step for lazy Adam
  const int chunk_shift_;    // rows per chunk = 1 << chunk_shift_
  const uint32_t chunk_mask_;
  std::array<Shard, kShards> shards_;
};

}  // namespace tj
