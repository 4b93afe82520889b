#include "coordinator/ps/row_index.h"

namespace tj {
namespace {

constexpr size_t kInitialSlots = 16;

}  // namespace

RowIndex::RowIndex() : slots_(kInitialSlots) {}

void RowIndex::Place(uint64_t hash, uint32_t row) {
  size_t i = Home(hash);
  while (slots_[i] != kEmpty) i = Next(i);
  slots_[i] = Slot(Tag(hash), row);
}

}  // namespace tj
