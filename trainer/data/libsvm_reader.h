// Loads a LibSVM / SVMlight file (plain or gzip), "label index:value index:value ...", into a
// SparseDataset (CSR), checking every line. Errors name the file and line.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "trainer/data/sparse_dataset.h"

namespace tj::train {

enum class LibsvmIndexBase {
  kDetect,  // 0-based if any index is 0, otherwise 1-based (LibSVM's own convention)
  kOneBased,
  kZeroBased,
};

struct LibsvmOptions {
  LibsvmIndexBase index_base = LibsvmIndexBase::kDetect;
  // Ids (indices after the base shift) must be < num_features. 0: one more than the largest id.
  int64_t num_features = 0;
  // 2: binary labels, 0/1 or -1/+1 (-1 is read as 0). More: labels are integers in
  // [0, num_classes).
  int32_t num_classes = 2;
};

// O(file size) time; memory 16 bytes per entry (id, value) plus 12 per row. Blank lines and
// "# comments" are skipped, "qid:" tokens ignored. InvalidArgument "path:line: ..." for a bad
// label, a token that is not index:value, an index out of range or not strictly increasing within
// its line, or a value that is not a finite number; InvalidArgument if there is no data row.
absl::StatusOr<std::unique_ptr<SparseDataset>> ReadLibsvm(const std::string& path,
                                                          const LibsvmOptions& options = {});

}  // namespace tj::train
