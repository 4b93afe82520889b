// VariableStore::ExportState and ImportState: the store's whole state as a stream of StateRecords.
#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/ps/memory_budget.h"
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

absl::StatusOr<bool> VariableStore::ExportState(const RecordSink& sink,
                                                const ExportOptions& options) const {
  std::vector<VariablePtr> variables;
  std::vector<TablePtr> tables;
  {
    // Only the maps are read under the store's lock; the contents go out under their own locks.
    StdReaderLock lock(mu_);
    variables = SortedByName(variables_);
    tables = SortedByName(tables_);
  }
  if (absl::Status held = CheckHoldsItsState(); !held.ok()) return held;
  StdMutexLock save_lock(save_mu_);
  RowsToExport which = RowsToExport::kAll;
  // Without tables a full save costs little more than a delta (dense variables go whole unless
  // they were not pushed since), and it needs nothing older: retention can drop the previous
  // checkpoints.
  if (options.save_id != 0 && options.since_save_id != 0 && !tables.empty()) {
    if (options.since_save_id == last_save_id_) {
      which = RowsToExport::kChangedSinceLast;
    } else if (options.since_save_id == save_before_last_id_) {
      which = RowsToExport::kChangedSincePrevious;
    }
  }
  if (options.save_id != 0) {
    // Recorded before anything is written: a table whose export fails keeps its change bits, a
    // superset of what the next delta needs (RowsToExport).
    if (which == RowsToExport::kAll) save_before_last_id_ = 0;
    if (which == RowsToExport::kChangedSinceLast) save_before_last_id_ = last_save_id_;
    last_save_id_ = options.save_id;
  }
  const bool delta = which != RowsToExport::kAll;
  StateWriter writer(sink);
  v1::StateRecord record;
  v1::StateRecord::Header* header = record.mutable_header();
  header->set_format(kStateFormat);
  header->set_version(kStateVersion);
  header->set_save_id(options.save_id);
  if (delta) header->set_base_save_id(options.since_save_id);
  TJ_RETURN_IF_ERROR(writer.Write(record));
  for (const VariablePtr& variable : variables) {
    TJ_RETURN_IF_ERROR(variable->Export(writer, which, /*mark_exported=*/options.save_id != 0));
  }
  for (const TablePtr& table : tables) {
    TJ_RETURN_IF_ERROR(table->Export(writer, which, /*mark_exported=*/options.save_id != 0));
  }
  record.mutable_end()->set_num_records(writer.records());
  TJ_RETURN_IF_ERROR(writer.Write(record));
  return delta;
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

// An `unchanged` Variable record of a delta: the variable read from the files before must be the
// same one (spec and step); it stays as they left it.
absl::Status KeepUnchanged(const DenseVariable* existing, const v1::StateRecord::Variable& record,
                           bool delta, uint64_t save_id) {
  const std::string& name = record.spec().name();
  if (!delta) {
    return Corrupt(absl::StrCat("variable '", name, "' is marked unchanged in a full save ",
                                save_id));
  }
  if (existing == nullptr) {
    return Corrupt(absl::StrCat("variable '", name, "' is unchanged in the delta of save ",
                                save_id, " but not in the save it builds on"));
  }
  if (existing->step() != record.step() ||
      !google::protobuf::util::MessageDifferencer::Equals(existing->SpecWithoutValue(),
                                                          record.spec())) {
    return Corrupt(absl::StrCat("variable '", name, "' is unchanged in the delta of save ",
                                save_id, " but differs from the save it builds on (step ",
                                existing->step(), " there, ", record.step(), " here)"));
  }
  return absl::OkStatus();
}

}  // namespace

int64_t VariableStore::RestoredBytes(const VariableMap& variables, const TableMap& tables,
                                     const std::string& except) {
  int64_t bytes = 0;
  for (const auto& [name, v] : variables) {
    if (name != except) {
      bytes += DenseBytes(static_cast<int64_t>(v->num_elements()), v->optimizer().num_slots());
    }
  }
  for (const auto& [name, t] : tables) {
    if (name != except) bytes += t->num_rows() * t->bytes_per_row();
  }
  return bytes;
}

absl::Status VariableStore::AdmitRestored(const std::string& what, int64_t bytes,
                                          int64_t restored_bytes) const {
  if (!budget_bytes_ || restored_bytes + bytes <= *budget_bytes_) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      what, " needs ", HumanBytes(bytes), " and what is restored before it ",
      HumanBytes(restored_bytes), ": more than this parameter server's memory budget of ",
      HumanBytes(*budget_bytes_), " (", budget_source_,
      "); restore it on a PS with more memory (the same number of PS replicas)"));
}

absl::StatusOr<StateCounts> VariableStore::ImportState(const RecordSource& source) {
  WholeRecords records(source);
  return ImportState(records);
}

absl::StatusOr<StateCounts> VariableStore::ImportState(RecordPieceSource& source) {
  const uint64_t generation = ReleaseForRestore();
  VariableMap variables;
  TableMap tables;
  uint64_t save_id = 0;
  absl::StatusOr<StateCounts> counts = ReadState(source, variables, tables, save_id);
  if (!counts.ok()) {
    // What was read so far is freed with the maps; the store holds nothing until a restore
    // succeeds (or the coordinator creates the variables afresh).
    StdWriterLock lock(mu_);
    if (restore_generation_ != generation) return counts.status();  // a newer one decides
    restore_ = RestoreState::kFailed;
    restore_error_ = counts.status().ToString();
    return counts.status();
  }
  int64_t row_bytes = 0;
  for (const auto& [name, t] : tables) row_bytes += t->num_rows() * t->bytes_per_row();
  {
    StdWriterLock lock(mu_);
    if (restore_generation_ != generation) {
      return absl::AbortedError(
          "a newer restore began while this one was reading; the store keeps what that one "
          "restores");
    }
    variables_.swap(variables);
    tables_.swap(tables);
    restore_ = RestoreState::kNone;
    restore_error_.clear();
  }
  row_bytes_.store(row_bytes, std::memory_order_relaxed);
  {
    StdReaderLock lock(mu_);
    for (const auto& [name, v] : variables_) v->MarkRestored();
  }
  {
    // The next save can be a delta since the last one read: every row is as it saved it. Unless a
    // newer restore began since the swap: its reset of the save ids stands.
    StdMutexLock save_lock(save_mu_);
    StdReaderLock lock(mu_);
    if (restore_generation_ == generation) {
      last_save_id_ = save_id;
      save_before_last_id_ = 0;
    }
  }
  return counts;
}

uint64_t VariableStore::ReleaseForRestore() {
  VariableMap old_variables;
  TableMap old_tables;
  uint64_t generation = 0;
  {
    StdWriterLock lock(mu_);
    generation = ++restore_generation_;
    old_variables.swap(variables_);
    old_tables.swap(tables_);
    restore_ = RestoreState::kRestoring;
    restore_error_.clear();
  }
  row_bytes_.store(0, std::memory_order_relaxed);
  {
    // Nothing saved before is held any more: the next save is a full one.
    StdMutexLock save_lock(save_mu_);
    last_save_id_ = 0;
    save_before_last_id_ = 0;
  }
  // The old state is freed here, before the new one is read, outside the lock (a pull still
  // sending a value keeps that buffer until it is sent).
  return generation;
}

absl::StatusOr<StateCounts> VariableStore::ReadState(RecordPieceSource& source,
                                                     VariableMap& variables, TableMap& tables,
                                                     uint64_t& save_id) const {
  // The segment being read: a full export, then deltas, each from its header to its end record.
  int segments = 0;
  bool delta = false;
  absl::flat_hash_set<std::string> seen;  // names of this segment
  // What the variable or table being read should end up with, checked when the next one starts.
  VariableFill variable;
  std::shared_ptr<EmbeddingTable> table;
  int64_t table_rows_left = 0;
  int64_t table_rows_total = 0;
  auto finish_current = [&]() -> absl::Status {
    TJ_RETURN_IF_ERROR(variable.Finish());
    if (table != nullptr && table_rows_left != 0) {
      return Corrupt(absl::StrCat("table '", table->name(), "' lacks ", table_rows_left, " rows"));
    }
    if (table != nullptr && table->num_rows() != table_rows_total) {
      return Corrupt(absl::StrCat("table '", table->name(), "' has ", table->num_rows(),
                                  " rows after the delta of save ", save_id, ", which says ",
                                  table_rows_total));
    }
    variable = VariableFill();
    table = nullptr;
    return absl::OkStatus();
  };

  std::string buffer;
  v1::StateRecord record;
  int64_t num_records = 0;  // in this segment
  bool ended = true;        // no segment open
  while (true) {
    uint64_t size = 0;
    TJ_ASSIGN_OR_RETURN(bool more, source.Begin(size));
    if (!more) break;
    // The record's first bytes say whether it is a dense chunk of the current variable (there is
    // none between segments): then its floats are read straight into the variable, the bulk of a
    // shard never passing through `buffer`.
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
    if (ended) {
      if (segments > 0 && kind != v1::StateRecord::kHeader) {
        return Corrupt("records after the end record");
      }
      if (kind != v1::StateRecord::kHeader || record.header().format() != kStateFormat ||
          record.header().version() != kStateVersion) {
        return Corrupt(absl::StrCat("the stream does not start with a ", kStateFormat, " version ",
                                    kStateVersion, " header"));
      }
      const uint64_t base = record.header().base_save_id();
      if (segments == 0 && base != 0) {
        return Corrupt(absl::StrCat("a delta (of save ", record.header().save_id(), " since save ",
                                    base, ") without the full save it builds on"));
      }
      if (segments > 0 && (base == 0 || base != save_id)) {
        return Corrupt(absl::StrCat(
            "save ", record.header().save_id(), " is not a delta of the save before it (", save_id,
            "): it is ", base == 0 ? "a full save" : absl::StrCat("a delta since ", base)));
      }
      ++segments;
      delta = base != 0;
      save_id = record.header().save_id();
      seen.clear();
      num_records = 0;
      ended = false;
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
        if (!seen.insert(spec.name()).second) {
          return Corrupt(absl::StrCat("variable '", spec.name(), "' appears twice"));
        }
        if (!delta && variables.contains(spec.name())) {
          return Corrupt(absl::StrCat("variable '", spec.name(), "' appears twice"));
        }
        if (record.variable().unchanged()) {
          // Kept as the files before this one left it: it must be there, the same variable at the
          // same step.
          const auto it = variables.find(spec.name());
          TJ_RETURN_IF_ERROR(KeepUnchanged(it == variables.end() ? nullptr : it->second.get(),
                                           record.variable(), delta, save_id));
          break;
        }
        // A delta's new version of a variable replaces the earlier file's: that one goes first.
        variables.erase(spec.name());
        TJ_RETURN_IF_ERROR(
            AdmitRestored(absl::StrCat("variable '", spec.name(), "'"),
                          DenseBytes(config->spec.num_elements(), config->optimizer.num_slots()),
                          RestoredBytes(variables, tables, spec.name())));
        auto created = std::make_shared<DenseVariable>(*std::move(config));
        created->set_step(record.variable().step());
        // A variable that changed is whole in a delta too.
        variables.insert_or_assign(spec.name(), created);
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
        if (!seen.insert(spec.name()).second || (!delta && tables.contains(spec.name()))) {
          return Corrupt(absl::StrCat("table '", spec.name(), "' appears twice"));
        }
        if (record.table().num_rows() < 0 || record.table().num_rows() > EmbeddingTable::kMaxRows) {
          return Corrupt(absl::StrCat("table '", spec.name(), "' says it has ",
                                      record.table().num_rows(), " rows"));
        }
        auto existing = tables.find(spec.name());
        if (delta && existing != tables.end()) {
          table = existing->second;
          if (!google::protobuf::util::MessageDifferencer::Equals(
                  table->ToSpec(), EmbeddingTable(*config).ToSpec())) {
            return Corrupt(absl::StrCat("table '", spec.name(), "' of save ", save_id,
                                        " differs from the save it is a delta of"));
          }
        } else {
          table = std::make_shared<EmbeddingTable>(*std::move(config));
          tables.insert_or_assign(spec.name(), table);
        }
        table_rows_total = record.table().num_rows();
        {
          // Sized once for the rows it will hold instead of growing its way there; never beyond
          // what the rest of the stream could add, whatever the record claims.
          const uint64_t row_bytes = sizeof(int64_t) + table->row_bytes();
          const auto held = static_cast<uint64_t>(table->num_rows());
          const uint64_t rows = std::min<uint64_t>(static_cast<uint64_t>(table_rows_total),
                                                   held + source.bytes_left() / row_bytes);
          TJ_RETURN_IF_ERROR(
              AdmitRestored(absl::StrCat("table '", spec.name(), "' (", rows, " rows)"),
                            static_cast<int64_t>(rows) * table->bytes_per_row(),
                            RestoredBytes(variables, tables, spec.name())));
          table->ReserveRows(rows);
        }
        table_rows_left = delta ? record.table().changed_rows() : table_rows_total;
        break;
      }
      case v1::StateRecord::kRows:
        if (table == nullptr) return Corrupt("rows outside a table");
        TJ_RETURN_IF_ERROR(table->ImportRows(rows, /*replace=*/delta));
        table_rows_left -= static_cast<int64_t>(rows.ids.size() / sizeof(int64_t));
        break;
      case v1::StateRecord::kEnd:
        TJ_RETURN_IF_ERROR(finish_current());
        if (record.end().num_records() != num_records) {
          return Corrupt(absl::StrCat("the end record counts ", record.end().num_records(),
                                      " records, the stream had ", num_records));
        }
        // A delta names every variable and table of its save: one it lacks was gone by then.
        absl::erase_if(variables, [&](const auto& entry) { return !seen.contains(entry.first); });
        absl::erase_if(tables, [&](const auto& entry) { return !seen.contains(entry.first); });
        ended = true;
        break;
      case v1::StateRecord::KIND_NOT_SET:
        return Corrupt(absl::StrCat("record ", num_records, " is of an unknown kind"));
    }
    ++num_records;
  }
  if (segments == 0) {
    return Corrupt(absl::StrCat("the stream does not start with a ", kStateFormat, " version ",
                                kStateVersion, " header"));
  }
  if (!ended) return Corrupt(absl::StrCat("truncated after ", num_records, " records (no end)"));

  StateCounts counts;
  counts.num_variables = static_cast<int64_t>(variables.size());
  counts.num_tables = static_cast<int64_t>(tables.size());
  for (const auto& [name, t] : tables) counts.num_rows += t->num_rows();
  return counts;
}

}  // namespace tj
