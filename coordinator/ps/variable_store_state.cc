// VariableStore::ExportState and ImportState: the store's whole state as a stream of StateRecords.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/ps/variable_store.h"

namespace tj {
namespace {

template <typename Map>
std::vector<typename Map::mapped_type> SortedByName(const Map& map) {
  std::vector<std::pair<std::string, typename Map::mapped_type>> entries(map.begin(), map.end());
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<typename Map::mapped_type> sorted;
  sorted.reserve(entries.size());
  for (auto& entry : entries) sorted.push_back(std::move(entry.second));
  return sorted;
}

absl::Status Corrupt(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("parameter-server state: ", what));
}

}  // namespace

absl::Status VariableStore::ExportState(const RecordSink& sink) const {
  std::vector<VariablePtr> variables;
  std::vector<TablePtr> tables;
  {
    // Only the maps are read under the store's lock; the contents go out under their own locks.
    std::shared_lock lock(mu_);
    variables = SortedByName(variables_);
    tables = SortedByName(tables_);
  }
  StateWriter writer(sink);
  v1::StateRecord record;
  record.mutable_header()->set_format(kStateFormat);
  record.mutable_header()->set_version(kStateVersion);
  TJ_RETURN_IF_ERROR(writer.Write(record));
  for (const VariablePtr& variable : variables) TJ_RETURN_IF_ERROR(variable->Export(writer));
  for (const TablePtr& table : tables) TJ_RETURN_IF_ERROR(table->Export(writer));
  record.mutable_end()->set_num_records(writer.records());
  return writer.Write(record);
}

namespace {

// A whole-record source seen as one in pieces (nothing is read in place; nothing is reserved).
class WholeRecords : public RecordPieceSource {
 public:
  explicit WholeRecords(const RecordSource& source) : source_(source) {}
  absl::StatusOr<bool> Begin(uint64_t& size) override {
    TJ_ASSIGN_OR_RETURN(bool more, source_(record_));
    read_ = 0;
    size = record_.size();
    return more;
  }
  absl::Status Read(char* out, size_t size) override {
    if (size > record_.size() - read_) return absl::InternalError("read past a record's end");
    std::memcpy(out, record_.data() + read_, size);
    read_ += size;
    return absl::OkStatus();
  }
  uint64_t bytes_left() const override { return 0; }

 private:
  const RecordSource& source_;
  std::string record_;
  size_t read_ = 0;
};

// The dense variable being imported and how far each of its arrays (values, then each slot) is
// filled: chunks must come in order and cover every element exactly once, since a restored
// variable's memory is not cleared first.
class VariableFill {
 public:
  VariableFill() = default;
  explicit VariableFill(std::shared_ptr<DenseVariable> variable)
      : variable_(std::move(variable)),
        filled_(static_cast<size_t>(1 + variable_->optimizer().num_slots()), 0) {}

  DenseVariable* get() const { return variable_.get(); }

  // Where a chunk of `bytes` at (slot, offset) goes, after checking that it follows the last one.
  absl::StatusOr<char*> Target(int32_t slot, int64_t offset, uint64_t bytes) {
    TJ_ASSIGN_OR_RETURN(char* target, variable_->ChunkTarget(slot, offset, bytes));
    int64_t& filled = filled_[static_cast<size_t>(slot)];
    if (offset != filled) {
      return Corrupt(absl::StrCat("variable '", variable_->name(), "': a chunk of slot ", slot,
                                  " at element ", offset, " where element ", filled,
                                  " was due (chunks must follow each other)"));
    }
    filled += static_cast<int64_t>(bytes / sizeof(float));
    return target;
  }

  // DataLoss when some array lacks elements.
  absl::Status Finish() const {
    if (variable_ == nullptr) return absl::OkStatus();
    int64_t lacking = 0;
    for (int64_t filled : filled_) {
      lacking += static_cast<int64_t>(variable_->num_elements()) - filled;
    }
    if (lacking == 0) return absl::OkStatus();
    return Corrupt(absl::StrCat("variable '", variable_->name(), "' lacks ", lacking, " floats"));
  }

 private:
  std::shared_ptr<DenseVariable> variable_;
  std::vector<int64_t> filled_;
};

}  // namespace

absl::StatusOr<StateCounts> VariableStore::ImportState(const RecordSource& source) {
  WholeRecords records(source);
  return ImportState(records);
}

absl::StatusOr<StateCounts> VariableStore::ImportState(RecordPieceSource& source) {
  VariableMap variables;
  TableMap tables;
  StateCounts counts;
  // What the variable or table being read should end up with, checked when the next one starts.
  VariableFill variable;
  std::shared_ptr<EmbeddingTable> table;
  int64_t table_rows_left = 0;
  auto finish_current = [&]() -> absl::Status {
    TJ_RETURN_IF_ERROR(variable.Finish());
    if (table != nullptr && table_rows_left != 0) {
      return Corrupt(absl::StrCat("table '", table->name(), "' lacks ", table_rows_left, " rows"));
    }
    variable = VariableFill();
    table = nullptr;
    return absl::OkStatus();
  };

  std::string buffer;
  v1::StateRecord record;
  int64_t num_records = 0;
  bool ended = false;
  while (true) {
    uint64_t size = 0;
    TJ_ASSIGN_OR_RETURN(bool more, source.Begin(size));
    if (!more) break;
    if (ended) return Corrupt("records after the end record");
    // The record's first bytes say whether it is a dense chunk of the current variable: then its
    // floats are read straight into the variable, the bulk of a shard never passing through
    // `buffer`.
    char head[kDenseChunkHeadBytes];
    const size_t head_size = static_cast<size_t>(std::min<uint64_t>(size, sizeof(head)));
    TJ_RETURN_IF_ERROR(source.Read(head, head_size));
    if (variable.get() != nullptr) {
      if (std::optional<DenseChunkHead> chunk =
              ViewDenseChunkHead(std::string_view(head, head_size), size);
          chunk.has_value()) {
        TJ_ASSIGN_OR_RETURN(char* target,
                            variable.Target(chunk->slot, chunk->offset, chunk->data_size));
        const size_t in_head = head_size - chunk->data_start;
        std::memcpy(target, head + chunk->data_start, in_head);
        TJ_RETURN_IF_ERROR(source.Read(target + in_head, chunk->data_size - in_head));
        ++num_records;
        continue;
      }
    }
    buffer.resize(size);
    std::memcpy(buffer.data(), head, head_size);
    TJ_RETURN_IF_ERROR(source.Read(buffer.data() + head_size, size - head_size));
    // Rows, and dense chunks encoded unusually, are viewed in `buffer` instead of copied into a
    // parsed message; every other record is parsed.
    v1::StateRecord::KindCase kind;
    DenseChunkView chunk;
    RowsView rows;
    if (std::optional<DenseChunkView> view = ViewDenseChunk(buffer); view.has_value()) {
      kind = v1::StateRecord::kDenseChunk;
      chunk = *view;
    } else if (std::optional<RowsView> rows_view = ViewRows(buffer); rows_view.has_value()) {
      kind = v1::StateRecord::kRows;
      rows = *rows_view;
    } else {
      if (!record.ParseFromString(buffer)) {
        return Corrupt(absl::StrCat("record ", num_records, " does not parse"));
      }
      kind = record.kind_case();
      if (kind == v1::StateRecord::kDenseChunk) {
        chunk = {record.dense_chunk().slot(), record.dense_chunk().offset(),
                 record.dense_chunk().data()};
      } else if (kind == v1::StateRecord::kRows) {
        rows = {record.rows().ids(), record.rows().data(), record.rows().steps()};
      }
    }
    if (num_records == 0 &&
        (kind != v1::StateRecord::kHeader || record.header().format() != kStateFormat ||
         record.header().version() != kStateVersion)) {
      return Corrupt(absl::StrCat("the stream does not start with a ", kStateFormat, " version ",
                                  kStateVersion, " header"));
    }
    switch (kind) {
      case v1::StateRecord::kHeader:
        if (num_records != 0) return Corrupt("a second header");
        break;
      case v1::StateRecord::kVariable: {
        TJ_RETURN_IF_ERROR(finish_current());
        const v1::VariableSpec& spec = record.variable().spec();
        absl::StatusOr<DenseVariableConfig> config = CheckVariableSpec(spec);
        if (!config.ok()) {
          return Corrupt(absl::StrCat("variable '", spec.name(), "': ", config.status().message()));
        }
        if (variables.contains(spec.name())) {
          return Corrupt(absl::StrCat("variable '", spec.name(), "' appears twice"));
        }
        auto created = std::make_shared<DenseVariable>(*std::move(config));
        created->set_step(record.variable().step());
        variables.emplace(spec.name(), created);
        variable = VariableFill(std::move(created));
        break;
      }
      case v1::StateRecord::kDenseChunk: {
        if (variable.get() == nullptr) return Corrupt("a dense chunk outside a variable");
        TJ_ASSIGN_OR_RETURN(char* target,
                            variable.Target(chunk.slot, chunk.offset, chunk.data.size()));
        if (!chunk.data.empty()) std::memcpy(target, chunk.data.data(), chunk.data.size());
        break;
      }
      case v1::StateRecord::kTable: {
        TJ_RETURN_IF_ERROR(finish_current());
        const v1::TableSpec& spec = record.table().spec();
        absl::StatusOr<TableConfig> config = CheckTableSpec(spec);
        if (!config.ok()) {
          return Corrupt(absl::StrCat("table '", spec.name(), "': ", config.status().message()));
        }
        if (tables.contains(spec.name())) {
          return Corrupt(absl::StrCat("table '", spec.name(), "' appears twice"));
        }
        table = std::make_shared<EmbeddingTable>(*std::move(config));
        table_rows_left = record.table().num_rows();
        // Sized once for its rows instead of doubling its way there; never beyond what the rest of
        // the stream could hold, whatever the record claims.
        const uint64_t row_bytes = sizeof(int64_t) + table->row_bytes();
        table->ReserveRows(std::min<uint64_t>(static_cast<uint64_t>(std::max<int64_t>(
                                                  table_rows_left, 0)),
                                              source.bytes_left() / row_bytes));
        tables.emplace(spec.name(), table);
        break;
      }
      case v1::StateRecord::kRows:
        if (table == nullptr) return Corrupt("rows outside a table");
        TJ_RETURN_IF_ERROR(table->ImportRows(rows));
        table_rows_left -= static_cast<int64_t>(rows.ids.size() / sizeof(int64_t));
        counts.num_rows += static_cast<int64_t>(rows.ids.size() / sizeof(int64_t));
        break;
      case v1::StateRecord::kEnd:
        TJ_RETURN_IF_ERROR(finish_current());
        if (record.end().num_records() != num_records) {
          return Corrupt(absl::StrCat("the end record counts ", record.end().num_records(),
                                      " records, the stream had ", num_records));
        }
        ended = true;
        break;
      case v1::StateRecord::KIND_NOT_SET:
        return Corrupt(absl::StrCat("record ", num_records, " is of an unknown kind"));
    }
    ++num_records;
  }
  if (!ended) return Corrupt(absl::StrCat("truncated after ", num_records, " records (no end)"));

  counts.num_variables = static_cast<int64_t>(variables.size());
  counts.num_tables = static_cast<int64_t>(tables.size());
  {
    std::unique_lock lock(mu_);
    variables_.swap(variables);
    tables_.swap(tables);
  }
  // The old state is freed here, outside the lock.
  return counts;
}

}  // namespace tj
