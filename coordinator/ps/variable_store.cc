#include "coordinator/ps/variable_store.h"

#include <google/protobuf/util/message_differencer.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <numeric>
#include <optional>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/base/strings.h"
#include "coordinator/ps/memory_budget.h"
#include "coordinator/ps/status_naming.h"

namespace tj {
namespace {

// A delta that is well-formed, of its variable's dtype and shape, and finite (`check_finite`, run
// last because it reads every element). Errors name the variable.
template <typename CheckFinite>
absl::Status CheckDelta(const std::string& name, const TensorSpec& spec, const v1::Tensor& header,
                        size_t num_data_bytes, CheckFinite&& check_finite) {
  TJ_RETURN_IF_ERROR(Naming("push to variable", name, CheckWellFormed(header, num_data_bytes)));
  if (!spec.Matches(header)) {
    return absl::InvalidArgumentError(absl::StrCat("push to variable '", name, "': delta is ",
                                                   TensorSpec::Of(header).ToString(),
                                                   " but the variable is ", spec.ToString()));
  }
  return Naming("push to variable", name, check_finite());
}

std::string Describe(const DenseVariableConfig& c) {
  return absl::StrCat(c.spec.ToString(), " with ", c.optimizer.ToString());
}

std::string Describe(const TableConfig& c) {
  return absl::StrCat("dim ", c.dim, " initializer {", c.initializer.ShortDebugString(), "} with ",
                      c.optimizer.ToString());
}

bool SameTable(const TableConfig& a, const TableConfig& b) {
  return a.dim == b.dim && a.optimizer == b.optimizer &&
         google::protobuf::util::MessageDifferencer::Equals(a.initializer, b.initializer);
}

}  // namespace

absl::Status VariableStore::Create(const v1::CreateVariablesRequest& request) {
  // Everything that can be checked without the maps is checked before taking their exclusive lock.
  std::vector<DenseVariableConfig> variable_configs;
  variable_configs.reserve(static_cast<size_t>(request.variables_size()));
  for (const v1::VariableSpec& spec : request.variables()) {
    if (spec.name().empty()) {
      return absl::InvalidArgumentError("cannot create a variable without a name");
    }
    absl::StatusOr<DenseVariableConfig> config = CheckVariableSpec(spec);
    TJ_RETURN_IF_ERROR(Naming("create variable", spec.name(), config.status()));
    variable_configs.push_back(*std::move(config));
  }
  std::vector<TableConfig> table_configs;
  for (const v1::TableSpec& spec : request.tables()) {
    if (spec.name().empty())
      return absl::InvalidArgumentError("cannot create a table without a name");
    absl::StatusOr<TableConfig> config = CheckTableSpec(spec);
    TJ_RETURN_IF_ERROR(Naming("create table", spec.name(), config.status()));
    table_configs.push_back(*std::move(config));
  }

  StdWriterLock lock(mu_);
  // Entries this request introduces, so that a name repeated within one request is checked like a
  // name that already exists.
  absl::flat_hash_map<std::string_view, int> introduced;
  std::vector<int> new_variables;
  for (int i = 0; i < static_cast<int>(variable_configs.size()); ++i) {
    const DenseVariableConfig& config = variable_configs[static_cast<size_t>(i)];
    const DenseVariableConfig* existing = nullptr;
    if (auto it = variables_.find(config.name); it != variables_.end()) {
      existing = &it->second->config();
    } else if (auto it = introduced.find(config.name); it != introduced.end()) {
      existing = &variable_configs[static_cast<size_t>(it->second)];
    }
    if (existing != nullptr) {
      if (existing->spec == config.spec && existing->optimizer == config.optimizer) continue;
      return absl::AlreadyExistsError(absl::StrCat("variable '", config.name,
                                                   "' already exists as ", Describe(*existing),
                                                   "; cannot create it as ", Describe(config)));
    }
    if (config.spec.dtype != v1::DTYPE_FLOAT32) {
      return absl::InvalidArgumentError(
          absl::StrCat("create variable '", config.name,
                       "': only float32 variables are supported, got ", config.spec.ToString()));
    }
    introduced.emplace(config.name, i);
    new_variables.push_back(i);
  }
  absl::flat_hash_map<std::string_view, int> introduced_tables;
  std::vector<int> new_tables;
  for (int i = 0; i < static_cast<int>(table_configs.size()); ++i) {
    const TableConfig& config = table_configs[static_cast<size_t>(i)];
    const TableConfig* existing = nullptr;
    if (auto it = tables_.find(config.name); it != tables_.end()) {
      existing = &it->second->config();
    } else if (auto it = introduced_tables.find(config.name); it != introduced_tables.end()) {
      existing = &table_configs[static_cast<size_t>(it->second)];
    }
    if (existing != nullptr) {
      if (SameTable(*existing, config)) continue;
      return absl::AlreadyExistsError(absl::StrCat("table '", config.name, "' already exists as ",
                                                   Describe(*existing), "; cannot create it as ",
                                                   Describe(config)));
    }
    introduced_tables.emplace(config.name, i);
    new_tables.push_back(i);
  }
  // Creation is rare (start of training, restarted workers re-creating), so initial values are
  // copied or generated under the exclusive lock rather than with a second, racing check.
  for (int i : new_variables) {
    DenseVariableConfig& config = variable_configs[static_cast<size_t>(i)];
    std::string name = config.name;
    variables_.emplace(std::move(name),
                       std::make_shared<DenseVariable>(std::move(config), request.variables(i)));
  }
  for (int i : new_tables) {
    TableConfig& config = table_configs[static_cast<size_t>(i)];
    std::string name = config.name;
    tables_.emplace(std::move(name), std::make_shared<EmbeddingTable>(std::move(config)));
  }
  // A coordinator that creates after a failed restore found nothing to restore: the store starts
  // afresh, as a restarted PS does. (During a restore, the restore's state replaces all this.)
  if (restore_ == RestoreState::kFailed) restore_ = RestoreState::kNone;
  return absl::OkStatus();
}

absl::Status VariableStore::Pull(const v1::PullRequest& request, v1::PullResponse& response) const {
  TJ_ASSIGN_OR_RETURN(std::vector<VariablePtr> variables, Find(request.names()));
  response.mutable_values()->Reserve(static_cast<int>(variables.size()));
  for (const VariablePtr& variable : variables) variable->CopyTo(*response.add_values());
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PulledValue>> VariableStore::PinForPull(
    const std::vector<std::string>& names) const {
  TJ_ASSIGN_OR_RETURN(std::vector<VariablePtr> variables, Find(names));
  std::vector<PulledValue> values;
  values.reserve(variables.size());
  for (const VariablePtr& variable : variables) {
    values.push_back(PulledValue{.spec = variable->spec(), .values = variable->PinValues()});
  }
  return values;
}

absl::Status VariableStore::Push(const v1::PushRequest& request) {
  if (request.names_size() != request.deltas_size()) {
    return absl::InvalidArgumentError(absl::StrCat("push has ", request.names_size(), " names but ",
                                                   request.deltas_size(), " deltas"));
  }
  // One path for every push: each delta's bytes seen as a single piece, not copied.
  std::vector<ChunkedTensor> deltas(static_cast<size_t>(request.deltas_size()));
  for (int i = 0; i < request.deltas_size(); ++i) {
    const v1::Tensor& delta = request.deltas(i);
    ChunkedTensor& chunked = deltas[static_cast<size_t>(i)];
    chunked.header.set_dtype(delta.dtype());
    *chunked.header.mutable_shape() = delta.shape();
    chunked.data.emplace_back(delta.data().data(), delta.data().size());
  }
  return Push(std::vector<std::string>(request.names().begin(), request.names().end()), deltas);
}

absl::Status VariableStore::Push(const std::vector<std::string>& names,
                                 const std::vector<ChunkedTensor>& deltas) {
  if (names.size() != deltas.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("push has ", names.size(), " names but ", deltas.size(), " deltas"));
  }
  TJ_ASSIGN_OR_RETURN(std::vector<VariablePtr> variables, Find(names));
  const bool out_of_place = UpdatableOutOfPlace(variables);
  for (size_t i = 0; i < deltas.size(); ++i) {
    const ChunkedTensor& delta = deltas[i];
    TJ_RETURN_IF_ERROR(CheckDelta(names[i], variables[i]->spec(), delta.header,
                                  TotalBytes(delta.data), [&delta, out_of_place] {
                                    // Out of place, the update itself checks, in the same pass.
                                    return out_of_place ? absl::OkStatus()
                                                        : CheckFiniteGradient(delta.data);
                                  }));
  }
  if (out_of_place) return PushOutOfPlace(names, variables, deltas);
  for (size_t i = 0; i < deltas.size(); ++i) variables[i]->Apply(deltas[i].data);
  return absl::OkStatus();
}

bool VariableStore::UpdatableOutOfPlace(const std::vector<VariablePtr>& variables) {
  for (size_t i = 0; i < variables.size(); ++i) {
    if (!variables[i]->updates_out_of_place()) return false;
    // The same variable twice would be locked twice.
    for (size_t j = 0; j < i; ++j) {
      if (variables[j] == variables[i]) return false;
    }
  }
  return true;
}

absl::Status VariableStore::PushOutOfPlace(const std::vector<std::string>& names,
                                           const std::vector<VariablePtr>& variables,
                                           const std::vector<ChunkedTensor>& deltas) {
  // Every variable stays locked from its new values' computation to their installation, so no
  // other push lands in between (it would be lost); all are locked in one global order (their
  // addresses), so two pushes sharing variables cannot deadlock.
  std::vector<size_t> order(variables.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return variables[a].get() < variables[b].get(); });
  std::vector<std::unique_lock<StdSharedMutex>> locks;
  locks.reserve(order.size());
  for (size_t i : order) locks.push_back(variables[i]->LockForUpdate());
  std::vector<std::shared_ptr<FloatBuffer>> updated(variables.size());
  for (size_t i = 0; i < variables.size(); ++i) {
    absl::StatusOr<std::shared_ptr<FloatBuffer>> values =
        variables[i]->PrepareLocked(deltas[i].data);
    if (!values.ok()) return Naming("push to variable", names[i], values.status());
    updated[i] = *std::move(values);
  }
  for (size_t i = 0; i < variables.size(); ++i) variables[i]->CommitLocked(std::move(updated[i]));
  return absl::OkStatus();
}

absl::Status VariableStore::Lookup(const v1::LookupRequest& request, v1::LookupResponse& response) {
  std::vector<TablePtr> tables;
  tables.reserve(static_cast<size_t>(request.lookups_size()));
  size_t response_bytes = 0;
  for (const v1::TableIds& lookup : request.lookups()) {
    TJ_ASSIGN_OR_RETURN(TablePtr table, FindTable(lookup.table()));
    if (lookup.ids().size() % sizeof(int64_t) != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("lookup in table '", lookup.table(), "': ", lookup.ids().size(),
                       " bytes of ids is not a whole number of int64s"));
    }
    // The answer is dim floats per 8-byte id: bounded before anything is allocated for it, so a
    // small request cannot make the PS build a response it could never send.
    const size_t ids = lookup.ids().size() / sizeof(int64_t);
    const size_t row_bytes = static_cast<size_t>(table->dim()) * sizeof(float);
    if (row_bytes != 0 && ids > (kMaxLookupResponseBytes - response_bytes) / row_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "lookup in table '", lookup.table(), "': the answer to ", ids, " ids of ", row_bytes,
          " bytes each would exceed ", kMaxLookupResponseBytes >> 20, " MiB; split the lookup"));
    }
    response_bytes += ids * row_bytes;
    tables.push_back(std::move(table));
  }
  TJ_ASSIGN_OR_RETURN(
      const std::vector<int64_t> reserved,
      ReserveAll(tables, request.lookups(), "lookup in"));
  response.mutable_values()->Reserve(request.lookups_size());
  for (int i = 0; i < request.lookups_size(); ++i) {
    const std::string& ids = request.lookups(i).ids();
    EmbeddingTable& table = *tables[static_cast<size_t>(i)];
    const size_t n = ids.size() / sizeof(int64_t);
    v1::Tensor* out = response.add_values();
    out->set_dtype(v1::DTYPE_FLOAT32);
    out->add_shape(static_cast<int64_t>(n));
    out->add_shape(table.dim());
    // Rows are written straight into the response's bytes: no staging buffer.
    std::string* data = out->mutable_data();
    data->resize(n * static_cast<size_t>(table.dim()) * sizeof(float));
    absl::StatusOr<size_t> created = table.Lookup(ids.data(), n, data->data());
    SettleRows(table, reserved[static_cast<size_t>(i)], created.value_or(n));
    TJ_RETURN_IF_ERROR(created.status());
  }
  return absl::OkStatus();
}

absl::Status VariableStore::PushSparse(const v1::PushSparseRequest& request) {
  std::vector<TablePtr> tables;
  tables.reserve(static_cast<size_t>(request.updates_size()));
  for (const v1::SparseGradients& update : request.updates()) {
    TJ_ASSIGN_OR_RETURN(TablePtr table, FindTable(update.table()));
    const size_t n = update.ids().size() / sizeof(int64_t);
    const size_t dim = static_cast<size_t>(table->dim());
    if (update.ids().size() % sizeof(int64_t) != 0 ||
        update.gradients().size() != n * dim * sizeof(float)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "push to table '", update.table(), "': ", update.ids().size(), " bytes of ids and ",
          update.gradients().size(), " bytes of gradients; expected 8 bytes per id and ",
          dim * sizeof(float), " per gradient row (", n, " ids x dim ", dim, ")"));
    }
    TJ_RETURN_IF_ERROR(Naming("push to table", update.table(),
                              CheckFiniteGradient(update.gradients().data(), n * dim)));
    tables.push_back(std::move(table));
  }
  TJ_ASSIGN_OR_RETURN(const std::vector<int64_t> reserved,
                      ReserveAll(tables, request.updates(), "push to"));
  for (int i = 0; i < request.updates_size(); ++i) {
    const v1::SparseGradients& update = request.updates(i);
    EmbeddingTable& table = *tables[static_cast<size_t>(i)];
    const size_t n = update.ids().size() / sizeof(int64_t);
    absl::StatusOr<size_t> created =
        table.Push(update.ids().data(), n, update.gradients().data());
    SettleRows(table, reserved[static_cast<size_t>(i)], created.value_or(n));
    TJ_RETURN_IF_ERROR(created.status());
  }
  return absl::OkStatus();
}

void VariableStore::SetMemoryBudget(int64_t bytes, std::string source) {
  budget_bytes_ = std::max<int64_t>(0, bytes);
  budget_source_ = std::move(source);
}

absl::StatusOr<int64_t> VariableStore::ReserveRows(const EmbeddingTable& table, const char* ids,
                                                   size_t n, absl::string_view what) {
  const int64_t per_row = table.bytes_per_row();
  const int64_t rows = table.num_rows();
  const int64_t dense = budget_bytes_ ? dense_bytes() : 0;
  // Room for `bytes` more, taken atomically so that concurrent calls cannot both take the last of
  // it.
  auto try_reserve = [&](int64_t bytes) {
    if (!budget_bytes_) {
      row_bytes_.fetch_add(bytes, std::memory_order_relaxed);
      return true;
    }
    int64_t used = row_bytes_.load(std::memory_order_relaxed);
    do {
      if (used + dense + bytes > *budget_bytes_) return false;
    } while (!row_bytes_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    return true;
  };
  // Every id new is the common case's bound and costs nothing to compute; only when it does not
  // fit are the ids that really lack a row counted.
  auto n_rows = static_cast<int64_t>(n);
  if (rows + n_rows <= EmbeddingTable::kMaxRows && try_reserve(n_rows * per_row)) {
    return n_rows * per_row;
  }
  n_rows = static_cast<int64_t>(table.CountMissing(ids, n));
  if (n_rows == 0) return 0;
  if (rows + n_rows > EmbeddingTable::kMaxRows) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, " table '", table.name(), "': ", n_rows, " new rows would exceed the ",
                     EmbeddingTable::kMaxRows, " rows a table may hold (it holds ", rows, ")"));
  }
  if (try_reserve(n_rows * per_row)) return n_rows * per_row;
  return absl::ResourceExhaustedError(absl::StrCat(
      what, " table '", table.name(), "': creating ", n_rows, " more rows (",
      HumanBytes(n_rows * per_row), ") would exceed this parameter server's memory budget: the "
      "table holds ", rows, " rows; embedding rows take ",
      HumanBytes(row_bytes_.load(std::memory_order_relaxed)), " and dense variables ",
      HumanBytes(dense), " of a budget of ", HumanBytes(budget_bytes_.value_or(0)), " (",
      budget_source_,
      "); give the PS more memory or more PS replicas"));
}

template <typename Entries>
absl::StatusOr<std::vector<int64_t>> VariableStore::ReserveAll(
    const std::vector<TablePtr>& tables, const Entries& entries, absl::string_view what) {
  std::vector<int64_t> reserved;
  reserved.reserve(tables.size());
  for (size_t i = 0; i < tables.size(); ++i) {
    const std::string& ids = entries[static_cast<int>(i)].ids();
    absl::StatusOr<int64_t> one =
        ReserveRows(*tables[i], ids.data(), ids.size() / sizeof(int64_t), what);
    if (!one.ok()) {
      // All or nothing: no table of the request gets a row.
      for (size_t j = 0; j < reserved.size(); ++j) SettleRows(*tables[j], reserved[j], 0);
      return one.status();
    }
    reserved.push_back(*one);
  }
  return reserved;
}

void VariableStore::SettleRows(const EmbeddingTable& table, int64_t reserved, size_t created) {
  row_bytes_.fetch_sub(reserved - static_cast<int64_t>(created) * table.bytes_per_row(),
                       std::memory_order_relaxed);
}

int64_t VariableStore::num_variables() const {
  StdReaderLock lock(mu_);
  return static_cast<int64_t>(variables_.size());
}

// Beside dense_bytes(), in the file the parsers' fuzz targets link (fuzz/CMakeLists.txt).
int64_t VariableStore::DenseBytes(int64_t num_elements, int num_slots) {
  return num_elements * static_cast<int64_t>(sizeof(float)) * (1 + num_slots);
}

int64_t VariableStore::dense_bytes() const {
  StdReaderLock lock(mu_);
  int64_t bytes = 0;
  for (const auto& [name, variable] : variables_) {
    bytes += DenseBytes(static_cast<int64_t>(variable->num_elements()),
                        variable->optimizer().num_slots());
  }
  return bytes;
}

int64_t VariableStore::num_tables() const {
  StdReaderLock lock(mu_);
  return static_cast<int64_t>(tables_.size());
}

VariableStore::TableTotals VariableStore::table_totals() const {
  StdReaderLock lock(mu_);
  TableTotals totals;
  for (const auto& [name, table] : tables_) {
    totals.rows += table->num_rows();
    totals.bytes += table->memory_bytes();
  }
  return totals;
}

// A store that holds nothing has just started (after a PS restart its state is gone until the
// coordinator creates or restores it), or a restore released its state. Unavailable (not NotFound)
// so that workers report it like an unreachable PS, and the coordinator restores from its
// checkpoint instead of failing the job.
absl::Status VariableStore::NotHeldErrorLocked(std::string_view kind,
                                               const std::string& name) const {
  std::string why;
  switch (restore_) {
    case RestoreState::kNone:
      why = "it has restarted and waits for the coordinator to create or restore them";
      break;
    case RestoreState::kRestoring:
      why = "a restore has released the state it held and is reading the checkpoint";
      break;
    case RestoreState::kFailed:
      why = absl::StrCat(
          "its last restore failed after releasing the state it held, and it "
          "waits for the coordinator to restore it again: ",
          restore_error_);
      break;
  }
  return absl::UnavailableError(absl::StrCat("this parameter server holds no variables or tables (",
                                             why, "); ", Cat(kind), " '", name, "' was asked for"));
}

absl::Status VariableStore::CheckHoldsItsState() const {
  StdReaderLock lock(mu_);
  if (restore_ == RestoreState::kNone) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("this parameter server cannot save: ",
                   restore_ == RestoreState::kRestoring
                       ? "a restore is reading its state"
                       : absl::StrCat("its last restore failed (", restore_error_,
                                      ") and it holds nothing until a restore succeeds")));
}

template <typename Names>
absl::StatusOr<std::vector<VariableStore::VariablePtr>> VariableStore::Find(
    const Names& names) const {
  std::vector<VariablePtr> found;
  found.reserve(static_cast<size_t>(names.size()));
  StdReaderLock lock(mu_);
  for (const std::string& name : names) {
    auto it = variables_.find(name);
    if (it == variables_.end()) {
      if (EmptyLocked()) return NotHeldErrorLocked("variable", name);
      return absl::NotFoundError(
          absl::StrCat("variable '", name, "' does not exist on this parameter server"));
    }
    found.push_back(it->second);
  }
  return found;
}

absl::StatusOr<VariableStore::TablePtr> VariableStore::FindTable(const std::string& name) const {
  StdReaderLock lock(mu_);
  auto it = tables_.find(name);
  if (it == tables_.end()) {
    if (EmptyLocked()) return NotHeldErrorLocked("table", name);
    return absl::NotFoundError(
        absl::StrCat("table '", name, "' does not exist on this parameter server"));
  }
  return it->second;
}

}  // namespace tj
