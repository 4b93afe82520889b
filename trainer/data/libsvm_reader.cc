#include "trainer/data/libsvm_reader.h"

#include <algorithm>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "trainer/data/line_reader.h"
#include "trainer/data/parse_number.h"

namespace tj::train {
namespace {

// Splits off the next whitespace-separated token; empty when the line is used up.
std::string_view NextToken(std::string_view& rest) {
  size_t start = 0;
  while (start < rest.size() && (rest[start] == ' ' || rest[start] == '\t')) ++start;
  size_t stop = start;
  while (stop < rest.size() && rest[stop] != ' ' && rest[stop] != '\t') ++stop;
  const std::string_view token = rest.substr(start, stop - start);
  rest.remove_prefix(stop);
  return token;
}

absl::StatusOr<int32_t> ParseLabel(std::string_view token, int32_t num_classes) {
  int64_t label = 0;
  if (!ParseIntegralLabel(token, label)) {
    return absl::InvalidArgumentError(
        absl::StrCat("label ", QuoteCell(token), " is not an integer"));
  }
  if (num_classes == 2) {
    if (label == -1) return 0;
    if (label == 0 || label == 1) return static_cast<int32_t>(label);
    return absl::InvalidArgumentError(
        absl::StrCat("binary label ", label, " is not one of 0, 1, -1, +1"));
  }
  if (label < 0 || label >= num_classes) {
    return absl::InvalidArgumentError(
        absl::StrCat("label ", label, " is outside [0, ", num_classes, ")"));
  }
  return static_cast<int32_t>(label);
}

}  // namespace

absl::StatusOr<std::unique_ptr<SparseDataset>> ReadLibsvm(const std::string& path,
                                                          const LibsvmOptions& options) {
  if (options.num_classes < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_classes must be >= 2, got ", options.num_classes));
  }
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<LineReader> reader, LineReader::Open(path));
  const int64_t min_index = options.index_base == LibsvmIndexBase::kOneBased ? 1 : 0;
  SparseRows rows;
  // The largest index and the line it is on: with a detected base, the num_features check can
  // only run at the end, and still names the line.
  int64_t max_index = -1;
  int64_t max_index_line = 0;
  bool saw_zero = false;

  std::string_view line;
  for (;;) {
    TJ_ASSIGN_OR_RETURN(bool more, reader->Next(line));
    if (!more) break;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    std::string_view rest = line;
    const std::string_view label_token = NextToken(rest);
    if (label_token.empty()) continue;
    const std::string where = absl::StrCat(path, ":", reader->line_number(), ": ");

    absl::StatusOr<int32_t> label = ParseLabel(label_token, options.num_classes);
    if (!label.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where, std::string(label.status().message())));
    }
    int64_t previous = -1;
    for (std::string_view token = NextToken(rest); !token.empty(); token = NextToken(rest)) {
      if (token.starts_with("qid:")) continue;
      const size_t colon = token.find(':');
      int64_t index = 0;
      float value = 0;
      if (colon == std::string_view::npos || !ParseInt64(token.substr(0, colon), index)) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, QuoteCell(token), " is not index:value"));
      }
      if (!ParseFloat(token.substr(colon + 1), value)) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "value in ", QuoteCell(token), " is not a finite number"));
      }
      if (index < min_index) {
        return absl::InvalidArgumentError(absl::StrCat(where, "index ", index, " is below ",
                                                       min_index, " (", min_index == 1 ? "1" : "0",
                                                       "-based indices)"));
      }
      if (index <= previous) {
        return absl::InvalidArgumentError(absl::StrCat(where, "index ", index, " follows ",
                                                       previous,
                                                       ": indices must increase within a line"));
      }
      previous = index;
      if (index == 0) saw_zero = true;
      if (index > max_index) {
        max_index = index;
        max_index_line = reader->line_number();
      }
      rows.ids.push_back(index);
      rows.values.push_back(value);
    }
    rows.labels.push_back(*label);
    rows.row_offsets.push_back(static_cast<int64_t>(rows.ids.size()));
  }

  if (rows.labels.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no data rows (the file is empty)"));
  }
  const bool one_based = options.index_base == LibsvmIndexBase::kOneBased ||
                         (options.index_base == LibsvmIndexBase::kDetect && !saw_zero);
  if (one_based) {
    for (int64_t& id : rows.ids) --id;
    --max_index;
  }
  if (options.num_features > 0 && max_index >= options.num_features) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", max_index_line, ": index ",
                                                   max_index + (one_based ? 1 : 0),
                                                   " is beyond num_features ", options.num_features,
                                                   " (", one_based ? "1" : "0", "-based indices)"));
  }
  const int64_t dim =
      options.num_features > 0 ? options.num_features : std::max<int64_t>(max_index + 1, 1);
  return SparseDataset::Create(dim, options.num_classes, std::move(rows));
}

}  // namespace tj::train
