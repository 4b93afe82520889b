// The id -> row map of one shard of an embedding table: open addressing with linear probing over
// one flat array of 4-byte slots, each holding a row number and a 5-bit tag of the id's hash. The
// ids themselves live with their rows (the table stores each row's id in front of its values), so
// the index costs 4 bytes a slot instead of 12 (id + row) and a probe that matches the tag reads
// the id from the row it is about to use anyway. A std::unordered_map would spend a heap node
// (~32 bytes) per row and chase a pointer per lookup.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "coordinator/ps/page_array.h"

namespace tj {

// Not thread-safe: the table's shard lock guards it. Rows are never removed. Rows are numbered
// 0, 1, 2, ... in insertion order; `id_of(row)` is the caller's id of a row already inserted.
class RowIndex {
 public:
  static constexpr uint32_t kNoRow = UINT32_MAX;
  static constexpr int kRowBits = 27;
  // Rows one index can hold: row numbers and their tag share 32 bits.
  static constexpr uint32_t kMaxRows = (uint32_t{1} << kRowBits) - 1;

  RowIndex();

  // The row of `id`, or kNoRow. `hash` must be RowHash(id) (id_hash.h); the caller computes it once
  // for both its shard choice and the probe.
  template <typename IdOf>
  uint32_t Find(int64_t id, uint64_t hash, const IdOf& id_of) const {
    const uint32_t tag = Tag(hash);
    for (size_t i = Home(hash);; i = Next(i)) {
      const uint32_t slot = slots_[i];
      if (slot == kEmpty) return kNoRow;
      if (TagOf(slot) == tag && id_of(RowOf(slot)) == id) return RowOf(slot);
    }
  }

  // Brings the cache line of `hash`'s home slot in (a lookup of many ids probes ahead).
  void Prefetch(uint64_t hash) const { __builtin_prefetch(slots_.get() + Home(hash)); }
  // The row in `hash`'s home slot when its tag matches: most likely the row of the id (a hint for
  // prefetching the row; Find decides). kNoRow otherwise.
  uint32_t Candidate(uint64_t hash) const {
    const uint32_t slot = slots_[Home(hash)];
    return slot != kEmpty && TagOf(slot) == Tag(hash) ? RowOf(slot) : kNoRow;
  }

  // The row of `id`, inserting `size()` (the next row number) for it when absent; `.second` is true
  // when inserted. The caller then stores the new row so that id_of(size() - 1) == id. At most
  // kMaxRows rows (the caller checks: see EmbeddingTable's row limit).
  template <typename IdOf>
  std::pair<uint32_t, bool> FindOrInsert(int64_t id, uint64_t hash, const IdOf& id_of) {
    // Load factor at most 4/5 after the insert, and at least 8/15 after growing by 3/2: 5 to 7.5
    // bytes of index a row. Linear probing over 4-byte slots needs ~3 probes to find an id and ~13
    // to insert one at the highest load, all within one or two cache lines.
    if ((size_ + 1) * 5 > slots_.size() * 4) Rebuild(slots_.size() + slots_.size() / 2, id_of);
    const uint32_t tag = Tag(hash);
    for (size_t i = Home(hash);; i = Next(i)) {
      const uint32_t slot = slots_[i];
      if (slot == kEmpty) {
        const auto row = static_cast<uint32_t>(size_++);
        slots_[i] = Slot(tag, row);
        return {row, true};
      }
      if (TagOf(slot) == tag && id_of(RowOf(slot)) == id) return {RowOf(slot), false};
    }
  }

  // Makes room for `n` rows in all, so that inserting up to that many never rebuilds the index (a
  // restore knows a table's row count from its Table record). Rows already held are reinserted.
  template <typename IdOf>
  void Reserve(size_t n, const IdOf& id_of) {
    // The smallest slot count keeping the load at most 4/5 with n rows, as FindOrInsert keeps it.
    const size_t slots = n + n / 4 + 1;
    if (slots > slots_.size()) Rebuild(slots, id_of);
  }

  size_t size() const { return size_; }
  // Bytes of the slot array, for memory accounting.
  size_t memory_bytes() const { return slots_.bytes(); }

 private:
  // A slot holds 1 + (tag << kRowBits | row): fresh pages (zeros) are empty slots.
  static constexpr uint32_t kEmpty = 0;

  static uint32_t Tag(uint64_t hash) { return static_cast<uint32_t>(hash & 31); }
  static uint32_t Slot(uint32_t tag, uint32_t row) { return ((tag << kRowBits) | row) + 1; }
  static uint32_t TagOf(uint32_t slot) { return (slot - 1) >> kRowBits; }
  static uint32_t RowOf(uint32_t slot) { return (slot - 1) & kMaxRows; }
  // The home slot: the hash's bits below the 4 the table's shard choice takes, scaled to the
  // number of slots (which need not be a power of two).
  size_t Home(uint64_t hash) const {
    __extension__ using Wide = unsigned __int128;  // the high half of a 64 x 64-bit product
    return static_cast<size_t>((static_cast<Wide>(hash << 4) * slots_.size()) >> 64);
  }
  size_t Next(size_t i) const { return i + 1 == slots_.size() ? 0 : i + 1; }

  // Reinserts rows 0 .. size()-1 into `slots` slots, reading them in row order (sequential in the
  // table's row storage) rather than chasing the old slots.
  template <typename IdOf>
  void Rebuild(size_t slots, const IdOf& id_of);
  void Place(uint64_t hash, uint32_t row);

  PageArray<uint32_t> slots_;
  size_t size_ = 0;
};

}  // namespace tj

#include "coordinator/ps/id_hash.h"

namespace tj {

template <typename IdOf>
void RowIndex::Rebuild(size_t slots, const IdOf& id_of) {
  // Freed before the new array is filled: the old one would only be read to learn the rows, which
  // the table's storage lists in order.
  slots_ = PageArray<uint32_t>();
  slots_ = PageArray<uint32_t>(slots);
  for (size_t row = 0; row < size_; ++row) {
    Place(RowHash(id_of(static_cast<uint32_t>(row))), static_cast<uint32_t>(row));
  }
}

}  // namespace tj
