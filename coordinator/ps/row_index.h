// The id -> row map of one shard of an embedding table: open addressing with linear probing over
// two flat arrays (ids, row numbers), 12 bytes a slot, no per-entry allocation. A
// std::unordered_map would spend a heap node (~32 bytes) per row and chase a pointer per lookup.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tj {

// Not thread-safe: the table's shard lock guards it. Rows are never removed.
class RowIndex {
 public:
  static constexpr uint32_t kNoRow = UINT32_MAX;

  RowIndex();

  // The row of `id`, or kNoRow. `hash` must be RowHash(id) (id_hash.h); the caller computes it once
  // for both its shard choice and the probe.
  uint32_t Find(int64_t id, uint64_t hash) const;
  // The row of `id`, inserting `new_row` for it when absent; `.second` is true when inserted.
  std::pair<uint32_t, bool> FindOrInsert(int64_t id, uint64_t hash, uint32_t new_row);

  // Makes room for `n` entries in all, so that inserting up to that many never grows the index.
  void Reserve(size_t n);

  size_t size() const { return size_; }
  // Bytes of the slot arrays, for memory accounting.
  size_t memory_bytes() const { return ids_.capacity() * sizeof(int64_t) + rows_.capacity() * 4; }

  // Calls fn(id, row) for every entry, in slot order.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (size_t i = 0; i < rows_.size(); ++i) {
      if (rows_[i] != kNoRow) fn(ids_[i], rows_[i]);
    }
  }

 private:
  void Grow() { Rehash(rows_.size() * 2); }
  void Rehash(size_t slots);

  std::vector<int64_t> ids_;
  std::vector<uint32_t> rows_;  // kNoRow marks an empty slot: every int64 is a valid id
  size_t mask_;                 // slots - 1; slots is a power of two
  size_t size_ = 0;
};

}  // namespace tj
