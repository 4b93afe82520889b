#include "coordinator/ps/row_index.h"

#include "coordinator/ps/id_hash.h"

namespace tj {
namespace {

constexpr size_t kInitialSlots = 16;

}  // namespace

RowIndex::RowIndex()
    : ids_(kInitialSlots), rows_(kInitialSlots, kNoRow), mask_(kInitialSlots - 1) {}

uint32_t RowIndex::Find(int64_t id, uint64_t hash) const {
  for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
    if (rows_[i] == kNoRow) return kNoRow;
    if (ids_[i] == id) return rows_[i];
  }
}

std::pair<uint32_t, bool> RowIndex::FindOrInsert(int64_t id, uint64_t hash, uint32_t new_row) {
  // Load factor at most 3/4 after the insert: linear probing with a well-mixed hash then needs ~2.5
  // probes to find an id and ~8.5 to insert one at worst.
  if ((size_ + 1) * 4 > rows_.size() * 3) Grow();
  for (size_t i = hash & mask_;; i = (i + 1) & mask_) {
    if (rows_[i] == kNoRow) {
      ids_[i] = id;
      rows_[i] = new_row;
      ++size_;
      return {new_row, true};
    }
    if (ids_[i] == id) return {rows_[i], false};
  }
}

void RowIndex::Reserve(size_t n) {
  size_t slots = rows_.size();
  // The same load factor as FindOrInsert keeps.
  while (n * 4 > slots * 3) slots *= 2;
  if (slots != rows_.size()) Rehash(slots);
}

void RowIndex::Rehash(size_t slots) {
  std::vector<int64_t> old_ids = std::move(ids_);
  std::vector<uint32_t> old_rows = std::move(rows_);
  ids_.assign(slots, 0);
  rows_.assign(slots, kNoRow);
  mask_ = slots - 1;
  for (size_t j = 0; j < old_rows.size(); ++j) {
    if (old_rows[j] == kNoRow) continue;
    // The hash is recomputed rather than stored: 8 bytes a slot saved for a rare rehash.
    const uint64_t hash = RowHash(old_ids[j]);
    size_t i = hash & mask_;
    while (rows_[i] != kNoRow) i = (i + 1) & mask_;
    ids_[i] = old_ids[j];
    rows_[i] = old_rows[j];
  }
}

}  // namespace tj
