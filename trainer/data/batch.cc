#include "trainer/data/batch.h"

namespace tj::train {

void Batch::Reset(BatchKind new_kind, int64_t new_dim) {
  kind = new_kind;
  dim = new_dim;
  num_rows = 0;
  dense.clear();
  row_offsets.clear();
  ids.clear();
  values.clear();
  fields.clear();
  labels.clear();
  if (kind == BatchKind::kSparse) row_offsets.push_back(0);
}

}  // namespace tj::train
