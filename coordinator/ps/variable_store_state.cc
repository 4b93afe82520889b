// VariableStore::ExportState and ImportState: the store's whole state as a stream of StateRecords.
#include <algorithm>
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

absl::StatusOr<StateCounts> VariableStore::ImportState(const RecordSource& source) {
  VariableMap variables;
  TableMap tables;
  StateCounts counts;
  // What the variable or table being read should end up with, checked when the next one starts.
  std::shared_ptr<DenseVariable> variable;
  int64_t variable_floats_left = 0;
  std::shared_ptr<EmbeddingTable> table;
  int64_t table_rows_left = 0;
  auto finish_current = [&]() -> absl::Status {
    if (variable != nullptr && variable_floats_left != 0) {
      return Corrupt(absl::StrCat("variable '", variable->name(), "' lacks ", variable_floats_left,
                                  " floats"));
    }
    if (table != nullptr && table_rows_left != 0) {
      return Corrupt(absl::StrCat("table '", table->name(), "' lacks ", table_rows_left, " rows"));
    }
    variable = nullptr;
    table = nullptr;
    return absl::OkStatus();
  };

  std::string buffer;
  v1::StateRecord record;
  int64_t num_records = 0;
  bool ended = false;
  while (true) {
    TJ_ASSIGN_OR_RETURN(bool more, source(buffer));
    if (!more) break;
    if (ended) return Corrupt("records after the end record");
    // Dense chunks and rows, nearly all of a shard's bytes, are viewed in `buffer` instead of
    // copied into a parsed message; every other record (and an unusually encoded one) is parsed.
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
        variable_floats_left = config->spec.num_elements() * (1 + config->optimizer.num_slots());
        variable = std::make_shared<DenseVariable>(*std::move(config));
        variable->set_step(record.variable().step());
        variables.emplace(spec.name(), variable);
        break;
      }
      case v1::StateRecord::kDenseChunk:
        if (variable == nullptr) return Corrupt("a dense chunk outside a variable");
        TJ_RETURN_IF_ERROR(variable->ImportChunk(chunk));
        variable_floats_left -= static_cast<int64_t>(chunk.data.size() / 4);
        break;
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
