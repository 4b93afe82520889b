// The variables and embedding tables one PS task holds, by name: the request-level semantics of
// CreateVariables, Pull, Push, Lookup and PushSparse, and export/import of the whole state for
// checkpoints. Knows nothing of gRPC: PsService is the glue around it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "coordinator/base/std_mutex.h"
#include "coordinator/ps/dense_variable.h"
#include "coordinator/ps/embedding_table.h"
#include "coordinator/ps/state_stream.h"
#include "tj/v1/ps.pb.h"

namespace tj {

// What ImportState restored.
struct StateCounts {
  int64_t num_variables = 0;
  int64_t num_tables = 0;
  int64_t num_rows = 0;
};

// A checkpoint save's identity (SaveShardRequest): with `since_save_id`, ExportState writes a delta
// when it can (see RowsToExport).
struct ExportOptions {
  uint64_t save_id = 0;  // 0: not a checkpoint save; the change bookkeeping is left alone
  uint64_t since_save_id = 0;
};

// Thread-safe. The name maps have a reader/writer lock held only to look names up (and,
// exclusively, to create or restore, which happens rarely); each variable and each table row shard
// has its own lock, so pushes to different variables or rows run in parallel and each push is
// applied whole, as it arrives (asynchronous training). Every request is all-or-nothing: one bad
// entry (unknown name: NotFound; wrong dtype, shape or size, NaN or infinity: InvalidArgument) and
// nothing is applied. Errors name the variable or table.
class VariableStore {
 public:
  VariableStore() = default;
  VariableStore(const VariableStore&) = delete;
  VariableStore& operator=(const VariableStore&) = delete;

  // Creates each variable (from its initial value or initializer) and each table. Idempotent: one
  // that already exists with the same shape (table: dim and initializer) and optimizer keeps its
  // current state; anything else is AlreadyExists naming it and both specs. Only float32 variables.
  absl::Status Create(const v1::CreateVariablesRequest& request);

  // Fills `response` with the values of request.names(), in order. Each value is read whole under
  // its variable's lock, but two variables may straddle a concurrent push.
  absl::Status Pull(const v1::PullRequest& request, v1::PullResponse& response) const;

  // The values of `names`, in order, pinned rather than copied (each of one moment, like Pull's).
  absl::StatusOr<std::vector<PulledValue>> PinForPull(const std::vector<std::string>& names) const;

  // Applies each gradient (delta) with its variable's optimizer.
  absl::Status Push(const v1::PushRequest& request);
  // The same for deltas still in the pieces they arrived in (no copy of the gradient bytes).
  absl::Status Push(const std::vector<std::string>& names,
                    const std::vector<ChunkedTensor>& deltas);

  // Fills `response` with one [n, dim] float32 tensor per lookup, creating missing rows. An answer
  // larger than kMaxLookupResponseBytes is InvalidArgument (nothing is created).
  static constexpr size_t kMaxLookupResponseBytes = size_t{1} << 30;
  absl::Status Lookup(const v1::LookupRequest& request, v1::LookupResponse& response);

  // Applies each table's sparse gradients with the table's optimizer.
  absl::Status PushSparse(const v1::PushSparseRequest& request);

  int64_t num_variables() const;
  int64_t num_tables() const;
  // Rows held by the embedding tables, and their bytes (EmbeddingTable::memory_bytes).
  struct TableTotals {
    int64_t rows = 0;
    int64_t bytes = 0;
  };
  TableTotals table_totals() const;
  // Bytes of the dense variables' values and optimizer slots (what a plan of the same variables
  // would need again: CreateVariables keeps existing ones).
  int64_t dense_bytes() const;

  // Writes the whole state (variables by name, then tables by name) as StateRecords. Each variable
  // and each table is a consistent snapshot taken under its own locks; for one snapshot of the
  // whole store, nobody should push meanwhile (the coordinator pauses training to checkpoint).
  absl::Status ExportState(const RecordSink& sink) const { return ExportState(sink, {}).status(); }
  // The same as a checkpoint save: with options.since_save_id equal to the last save's id (or the
  // one before it, when the last was never committed) only the embedding rows changed since then
  // are written, a delta; true when it wrote one. Any other since_save_id (a PS restarted since, a
  // save it never made), or a store without tables, writes the whole state. Saves run one at a
  // time.
  absl::StatusOr<bool> ExportState(const RecordSink& sink, const ExportOptions& options) const;
  // Replaces the whole state with the one `source` yields: a full export, optionally followed by
  // deltas, each made since the save before it. DataLoss for a stream that is truncated (no End
  // record), malformed or inconsistent, or a delta of another save. The next delta can be made
  // since the last save read.
  // The state held before is released first, so that a restore holds one state at a time, never
  // the old and the new together. Until the restore succeeds the store holds nothing: Pull, Push,
  // Lookup and PushSparse are Unavailable (as on a restarted PS, which the coordinator restores)
  // naming the restore in progress or the error that ended it, and a save is FailedPrecondition.
  // A later successful restore, or a Create (the coordinator found nothing to restore), ends that.
  absl::StatusOr<StateCounts> ImportState(const RecordSource& source);
  // The same from a source of records in pieces: dense chunks are read straight into the new
  // variables, and a table's row index is sized from its row count before its rows arrive.
  absl::StatusOr<StateCounts> ImportState(RecordPieceSource& source);

  // Bounds the memory embedding rows may take: a Lookup or PushSparse that could create rows
  // beyond `bytes` (with the dense variables' bytes) is ResourceExhausted naming the table, its
  // rows and the budget, before any row is created. Without a call there is no bound; a budget of
  // 0 (a PS that started with no room beyond its headroom) refuses every new row. `source` says
  // where the figure came from, for the message. A restore whose state (its variables and rows,
  // counted as they are read) would exceed it is ResourceExhausted too, before the variable or
  // table's rows that cross it are allocated, and the store is left unchanged.
  void SetMemoryBudget(int64_t bytes, std::string source);

 private:
  using VariablePtr = std::shared_ptr<DenseVariable>;
  using TablePtr = std::shared_ptr<EmbeddingTable>;
  using VariableMap = absl::flat_hash_map<std::string, VariablePtr>;
  using TableMap = absl::flat_hash_map<std::string, TablePtr>;

  // Resolves every name, or NotFound naming the first unknown one (Unavailable when the store holds
  // nothing at all: see NotHeldErrorLocked). Handed out as shared_ptr so that
  // ImportState can replace the maps under a running call's feet.
  template <typename Names>
  absl::StatusOr<std::vector<VariablePtr>> Find(const Names& names) const;
  absl::StatusOr<TablePtr> FindTable(const std::string& name) const;
  // Whether a push to `variables` can compute every update out of place (DenseVariable::
  // PrepareLocked): no optimizer slots, no variable twice.
  static bool UpdatableOutOfPlace(const std::vector<VariablePtr>& variables);
  // Holds every variable's lock at once (DenseVariable::LockForUpdate), a set the thread-safety
  // analysis cannot follow: not checked.
  absl::Status PushOutOfPlace(
      const std::vector<std::string>& names, const std::vector<VariablePtr>& variables,
      const std::vector<ChunkedTensor>& deltas) ABSL_NO_THREAD_SAFETY_ANALYSIS;
  // No variable and no table: a fresh (or restarted) PS, or one whose state a restore released.
  bool EmptyLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return variables_.empty() && tables_.empty();
  }
  // The error for a name asked of an empty store (Unavailable): it names a restore in progress or
  // the error of the one that failed.
  absl::Status NotHeldErrorLocked(std::string_view kind, const std::string& name) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // OK, or FailedPrecondition while a restore runs or after one failed: a save would write a
  // shard without the state.
  absl::Status CheckHoldsItsState() const ABSL_LOCKS_EXCLUDED(mu_);
  // ImportState's first step: the state is released and the store marked as restoring. Returns
  // the restore's generation: only the newest restore may set what the store holds.
  uint64_t ReleaseForRestore() ABSL_LOCKS_EXCLUDED(mu_);
  // ImportState's reading: the state `source` yields, into `variables` and `tables`, and the id of
  // the last save read.
  absl::StatusOr<StateCounts> ReadState(RecordPieceSource& source, VariableMap& variables,
                                        TableMap& tables, uint64_t& save_id) const;
  // Room for the rows `n` ids may create in `table`, taken from the budget (the bytes reserved),
  // or ResourceExhausted. `what`: "lookup in" / "push to", for the message.
  absl::StatusOr<int64_t> ReserveRows(const EmbeddingTable& table, const char* ids, size_t n,
                                      absl::string_view what);
  // ReserveRows for each table of a request (entries: its TableIds / SparseGradients), or none.
  template <typename Entries>
  absl::StatusOr<std::vector<int64_t>> ReserveAll(const std::vector<TablePtr>& tables,
                                                  const Entries& entries, absl::string_view what);
  // Restores are bounded by the memory budget too: the bytes of a dense variable, the state a
  // restore has read so far (but `except`, the name being replaced), and OK or ResourceExhausted
  // naming `what` and the budget, before it is allocated.
  static int64_t DenseBytes(int64_t num_elements, int num_slots);
  static int64_t RestoredBytes(const VariableMap& variables, const TableMap& tables,
                               const std::string& except);
  absl::Status AdmitRestored(const std::string& what, int64_t bytes, int64_t restored_bytes) const;
  // Keeps the bytes of the rows a call created out of `reserved`, gives the rest back.
  void SettleRows(const EmbeddingTable& table, int64_t reserved, size_t created);

  // A std::shared_mutex (StdSharedMutex) for the same reason as DenseVariable's: TSan can see it.
  mutable StdSharedMutex mu_;
  VariableMap variables_ ABSL_GUARDED_BY(mu_);
  TableMap tables_ ABSL_GUARDED_BY(mu_);
  // Whether the maps hold the state (kNone), or a restore released it (ImportState).
  enum class RestoreState { kNone, kRestoring, kFailed };
  RestoreState restore_ ABSL_GUARDED_BY(mu_) = RestoreState::kNone;
  std::string restore_error_ ABSL_GUARDED_BY(mu_);  // of the failed restore
  // Counts restores begun. Restores can overlap (the checkpointer gives up on one and starts the
  // next): one that ends after a newer one began changes nothing, or a cancelled restore failing
  // late would mark a restored store failed, and a stale one succeeding would replace newer state.
  uint64_t restore_generation_ ABSL_GUARDED_BY(mu_) = 0;

  // Checkpoint saves (ExportOptions): the id of the last save and of the one before it, when the
  // tables' change bits still tell the rows changed since it (0: they do not).
  mutable StdMutex save_mu_;
  mutable uint64_t last_save_id_ ABSL_GUARDED_BY(save_mu_) = 0;
  mutable uint64_t save_before_last_id_ ABSL_GUARDED_BY(save_mu_) = 0;

  std::optional<int64_t> budget_bytes_;  // set before serving; unset: no bound
  std::string budget_source_;
  std::atomic<int64_t> row_bytes_{0};  // rows' bytes (bytes_per_row each), reservations included
};

}  // namespace tj
