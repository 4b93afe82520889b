// One dense float32 variable held by a parameter server, with its optimizer's slots and step count
// next to it. Its spec never changes after creation, so it is read without a lock; values, slots
// and step share one lock of their own, so pushes to different variables never wait for each other.
// The values live in a FloatBuffer that pulls send from without copying (PinValues); an update
// that finds the buffer still being sent copies it first (copy-on-write), so a pull always sends
// the values of one moment, never half an update.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/base/std_mutex.h"
#include "coordinator/ps/byte_chunks.h"
#include "coordinator/ps/float_buffer.h"
#include "coordinator/ps/state_stream.h"
#include "coordinator/ps/variable_spec.h"
#include "tj/v1/ps.pb.h"

namespace tj {

// A variable's spec and its values at one moment, pinned until the holder is done (a pull being
// sent).
struct PulledValue {
  TensorSpec spec;
  PinnedFloats values;
};

class DenseVariable {
 public:
  // `config` comes from CheckVariableSpec(`spec`) and is float32. The values start as
  // spec.initial_value() when it is set, else from spec.initializer(); slots at their initial
  // value.
  DenseVariable(DenseVariableConfig config, const v1::VariableSpec& spec);
  // Values unset (nothing is written to them, not even zeros: a restore writes every element, and
  // a pass over gigabytes of fresh memory costs as much as the restore's read), slots at their
  // initial value: to be filled by ImportChunk, which the caller makes cover every element.
  explicit DenseVariable(DenseVariableConfig config);

  DenseVariable(const DenseVariable&) = delete;
  DenseVariable& operator=(const DenseVariable&) = delete;

  const DenseVariableConfig& config() const { return config_; }
  const std::string& name() const { return config_.name; }
  const TensorSpec& spec() const { return config_.spec; }
  const OptimizerConfig& optimizer() const { return config_.optimizer; }
  int64_t step() const;

  // Writes dtype, shape and the current values into `out`, replacing what it held.
  void CopyTo(v1::Tensor& out) const;
  // The current values, unchanged for as long as the result lives (later updates go to a copy).
  PinnedFloats PinValues() const;

  // Applies `grad` with the optimizer and counts a step. `grad` must be well-formed, finite and
  // match spec(); a mismatch here is a bug in the caller and aborts rather than corrupting memory.
  // `grad` is in the pieces it arrived in: num_elements() * 4 bytes in all.
  void Apply(const ByteChunks& grad);
  size_t num_elements() const { return num_elements_; }

  // A push in two steps, for a request that updates several variables all or nothing, and for
  // optimizers without slots only (assign_add, SGD: updates_out_of_place()). Under the lock from
  // LockForUpdate, PrepareLocked computes the updated values into a new buffer, checking the
  // gradient's finiteness in the same pass (InvalidArgument naming the element, and nothing
  // changed), and CommitLocked installs them and counts the step. One pass over the gradient
  // instead of a check pass and an update pass; the replaced buffer goes back to the pool.
  // The lock is movable so that a push can hold one per variable; the analysis cannot follow such
  // a set, so the caller of PrepareLocked and CommitLocked is not checked (VariableStore::
  // PushOutOfPlace), but what they touch is.
  bool updates_out_of_place() const { return config_.optimizer.num_slots() == 0; }
  std::unique_lock<StdSharedMutex> LockForUpdate() { return std::unique_lock(mu_); }
  absl::StatusOr<std::shared_ptr<FloatBuffer>> PrepareLocked(const ByteChunks& grad) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CommitLocked(std::shared_ptr<FloatBuffer> values) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Writes a Variable record, then the values and each slot in DenseChunks, all under one read
  // lock: pushes wait, pulls do not. With `which` other than kAll, a variable not updated since
  // that export is only its Variable record, marked `unchanged` (a delta). `mark_exported` (a
  // checkpoint save) records this export's step for the next one's choice, once it is written.
  absl::Status Export(StateWriter& writer, RowsToExport which = RowsToExport::kAll,
                      bool mark_exported = false) const;
  // A restored variable counts as written by the save it was read from (the store's last save).
  void MarkRestored() const;
  // Copies one chunk in. DataLoss for a slot this optimizer lacks or a range outside the variable.
  // Only for a variable not yet shared with other threads (so without the lock, unchecked).
  absl::Status ImportChunk(const DenseChunkView& chunk);
  // Where the `bytes` of a chunk of `slot` at `offset` go, for a restore that reads them in place;
  // the same checks and errors as ImportChunk. Only for a variable not yet shared.
  absl::StatusOr<char*> ChunkTarget(int32_t slot, int64_t offset,
                                    uint64_t bytes) ABSL_NO_THREAD_SAFETY_ANALYSIS;
  // Only for a variable not yet shared.
  void set_step(int64_t step) ABSL_NO_THREAD_SAFETY_ANALYSIS { step_ = step; }
  // The spec a Variable record carries: everything but the values.
  v1::VariableSpec SpecWithoutValue() const;

 private:
  // The values and each slot in DenseChunks.
  absl::Status ExportChunksLocked(StateWriter& writer) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // values_, copied first if a pull is still sending it.
  float* WritableValuesLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const DenseVariableConfig config_;
  const size_t num_elements_;
  // A std::shared_mutex (StdSharedMutex) rather than absl::Mutex: Debian's Abseil is not built
  // with TSan, which then cannot see absl::Mutex and reports every guarded access as a race.
  mutable StdSharedMutex mu_;
  // The pointer and the contents while unpinned (a pinned buffer is only read).
  std::shared_ptr<FloatBuffer> values_ ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<float>> slots_ ABSL_GUARDED_BY(mu_);  // optimizer().num_slots() of them
  int64_t step_ ABSL_GUARDED_BY(mu_) = 0;
  // Incremental checkpoints: step_ when the last save wrote this variable and when the save before
  // it did (-1: none). Steps only grow, so a variable whose step still equals one of them has not
  // changed since that save. Atomics rather than guarded by mu_: exports write them under the
  // shared lock, and the store runs one export at a time (VariableStore::save_mu_).
  mutable std::atomic<int64_t> saved_step_{-1};
  mutable std::atomic<int64_t> saved_step_before_{-1};
};

}  // namespace tj
