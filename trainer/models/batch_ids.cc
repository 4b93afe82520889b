#include "trainer/models/batch_ids.h"

#include "absl/container/flat_hash_map.h"

namespace tj::train {

absl::StatusOr<BatchIds> DedupIds(const Batch& batch) {
  if (batch.kind != BatchKind::kSparse) {
    return absl::InvalidArgumentError("DedupIds needs a sparse batch");
  }
  BatchIds out;
  out.slots.resize(batch.ids.size());
  absl::flat_hash_map<int64_t, int32_t> slot_of;
  slot_of.reserve(batch.ids.size());
  for (size_t e = 0; e < batch.ids.size(); ++e) {
    const auto [it, inserted] =
        slot_of.try_emplace(batch.ids[e], static_cast<int32_t>(out.unique.size()));
    if (inserted) out.unique.push_back(batch.ids[e]);
    out.slots[e] = it->second;
  }
  return out;
}

}  // namespace tj::train
