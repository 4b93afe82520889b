#include "trainer/data/csv_reader.h"

#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "trainer/data/line_reader.h"
#include "trainer/data/parse_number.h"

namespace tj::train {
namespace {

// Labels above this are almost surely a wrong label column (a feature read as the label), and
// would make the softmax layer absurdly wide.
constexpr int64_t kMaxClasses = 1 << 20;

bool IsBlank(std::string_view line) { return TrimSpaces(line).empty(); }

// Calls fn(column, cell) for every cell; stops early and returns false if fn does.
template <typename Fn>
bool ForEachCell(std::string_view line, char delimiter, Fn&& fn) {
  int column = 0;
  for (;;) {
    const size_t stop = line.find(delimiter);
    if (!fn(column, line.substr(0, stop))) return false;
    if (stop == std::string_view::npos) return true;
    line.remove_prefix(stop + 1);
    ++column;
  }
}

int CountCells(std::string_view line, char delimiter) {
  int n = 0;
  ForEachCell(line, delimiter, [&n](int, std::string_view) { return ++n, true; });
  return n;
}

bool LooksLikeHeader(std::string_view line, char delimiter) {
  bool any_number = false;
  ForEachCell(line, delimiter, [&any_number](int, std::string_view cell) {
    float unused;
    any_number = ParseFloat(cell, unused);
    return !any_number;
  });
  return !any_number;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DenseDataset>> ReadCsv(const std::string& path,
                                                      const CsvOptions& options) {
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));
  std::vector<float> features;
  std::vector<int32_t> labels;
  int width = 0;  // columns per row, fixed by the first non-blank line
  int64_t width_line = 0;
  int label_column = 0;
  int64_t max_label = -1;
  bool saw_header = false;

  std::string_view line;
  for (;;) {
    TJ_ASSIGN_OR_RETURN(bool more, reader->Next(line));
    if (!more) break;
    if (IsBlank(line)) continue;
    const int64_t line_number = reader->line_number();
    const auto where = [&](int column) {
      return column < 0 ? absl::StrCat(path, ":", line_number, ": ")
                        : absl::StrCat(path, ":", line_number, ": column ", column + 1, ": ");
    };

    if (width == 0) {
      width = CountCells(line, options.delimiter);
      width_line = line_number;
      if (width < 2) {
        return absl::InvalidArgumentError(absl::StrCat(
            where(-1), "found ", width, " column; need at least one feature and the label (is ",
            "the delimiter '", std::string(1, options.delimiter), "'?)"));
      }
      label_column = options.label_column < 0 ? width + options.label_column : options.label_column;
      if (label_column < 0 || label_column >= width) {
        return absl::InvalidArgumentError(absl::StrCat(where(-1), "label column ",
                                                       options.label_column, " does not exist in ",
                                                       "a row of ", width, " columns"));
      }
      const bool header =
          options.header == CsvHeader::kPresent ||
          (options.header == CsvHeader::kDetect && LooksLikeHeader(line, options.delimiter));
      if (header) {
        saw_header = true;
        continue;
      }
    }

    absl::Status error;
    int columns = 0;  // cells seen, up to width + 1
    ForEachCell(line, options.delimiter, [&](int column, std::string_view cell) {
      columns = column + 1;
      if (column >= width) return false;  // reported below as a width error
      if (column == label_column) {
        int64_t label = 0;
        if (!ParseIntegralLabel(cell, label)) {
          error = absl::InvalidArgumentError(
              absl::StrCat(where(column), QuoteCell(cell), " is not an integer class label"));
        } else if (label < 0 || label >= kMaxClasses ||
                   (options.num_classes > 0 && label >= options.num_classes)) {
          const int64_t limit = options.num_classes > 0 ? options.num_classes : kMaxClasses;
          error = absl::InvalidArgumentError(
              absl::StrCat(where(column), "label ", label, " is outside [0, ", limit, ")"));
        } else {
          labels.push_back(static_cast<int32_t>(label));
          if (label > max_label) max_label = label;
        }
      } else {
        float value = 0;
        if (!ParseFloat(cell, value)) {
          error = absl::InvalidArgumentError(
              absl::StrCat(where(column), cell.empty() ? "empty cell" : QuoteCell(cell),
                           cell.empty() ? "" : " is not a finite number"));
        } else {
          features.push_back(value);
        }
      }
      return error.ok();
    });
    if (!error.ok()) return error;
    if (columns != width) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(-1), "expected ", width, " columns (as on line ", width_line,
                       "), found ", CountCells(line, options.delimiter)));
    }
  }

  if (labels.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": no data rows", saw_header ? " (only a header line)" : " (the file is empty)"));
  }
  const int32_t num_classes =
      options.num_classes > 0 ? options.num_classes : static_cast<int32_t>(max_label + 1);
  return DenseDataset::Create(width - 1, num_classes, std::move(features), std::move(labels));
}

}  // namespace tj::train
