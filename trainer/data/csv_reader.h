// Loads a CSV file (plain or gzip) of dense features and one integer class label per row into a
// DenseDataset, checking every row. Errors name the file, line and column.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "trainer/data/dense_dataset.h"

namespace tj::train {

enum class CsvHeader {
  kDetect,   // the first line is a header if none of its cells is a number
  kPresent,  // the first line is a header
  kAbsent,   // every line is data
};

struct CsvOptions {
  // 0-based index of the label column; negative counts from the end (-1: the last column).
  int label_column = -1;
  CsvHeader header = CsvHeader::kDetect;
  char delimiter = ',';
  // Labels must be in [0, num_classes). 0: inferred as one more than the largest label.
  int32_t num_classes = 0;
};

// Reads the whole file once into contiguous storage: O(file size) time, rows x (columns - 1)
// floats of memory. Lines that are empty or all spaces are skipped. InvalidArgument
// "path:line: ..." for a row of the wrong width, a cell that is not a finite number (with its
// 1-based column) or a label that is not an integer in range; InvalidArgument if there is no data
// row; the LineReader's errors if the file cannot be opened or inflated.
absl::StatusOr<std::unique_ptr<DenseDataset>> ReadCsv(const std::string& path,
                                                      const CsvOptions& options = {});

}  // namespace tj::train
