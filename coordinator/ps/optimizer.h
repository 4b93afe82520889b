// The update rules a PS applies to pushed gradients (assign_add, SGD, Adagrad, Adam) and their
// per-element slots. One kernel serves dense variables (slot arrays of their own) and sparse rows
// (slots stored right after the row's values).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/ps/byte_chunks.h"
#include "tj/v1/ps.pb.h"

namespace tj {

enum class OptimizerKind { kAssignAdd, kSgd, kAdagrad, kAdam };

// An optimizer with its defaults filled in and its hyperparameters checked.
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAssignAdd;
  float learning_rate = 0;
  float initial_accumulator_value = 0.1f;  // Adagrad
  float epsilon = 1e-7f;                   // Adagrad, Adam
  float beta1 = 0.9f;                      // Adam
  float beta2 = 0.999f;                    // Adam

  // InvalidArgument for a learning rate that is not finite and > 0, betas outside [0, 1), a
  // negative epsilon or accumulator. The message does not name the variable; callers add that.
  static absl::StatusOr<OptimizerConfig> FromProto(const v1::Optimizer& proto);
  // With every default written out, so that a saved spec restores the same optimizer even if the
  // defaults change.
  v1::Optimizer ToProto() const;

  // Slot arrays the optimizer keeps per element: 0, 0, 1 (accumulator), 2 (m, v).
  int num_slots() const;
  float slot_initial_value(int slot) const;
  // Whether updates depend on a step count (Adam's bias correction).
  bool counts_steps() const { return kind == OptimizerKind::kAdam; }
  // "adam(lr=0.001, beta1=0.9, beta2=0.999, epsilon=1e-07)", for error messages.
  std::string ToString() const;

  bool operator==(const OptimizerConfig&) const = default;
};

// Applies one gradient to `n` values. `grad` points at n float32s with no alignment guarantee (wire
// bytes). `slot0`/`slot1` are the first and second slot arrays (nullptr when unused). `step` is the
// number of updates applied before this one. Callers hold the lock of the values and slots.
void ApplyUpdate(const OptimizerConfig& config, int64_t step, size_t n, const char* grad,
                 float* values, float* slot0, float* slot1);

// For optimizers without slots (assign_add, SGD): out[i] = values[i] updated by grad[i], and the
// finiteness check of grad in the same pass (one read of each array instead of two of grad).
// Returns the index of the first non-finite element of grad, or -1; `out` is then unspecified.
int64_t ApplyOutOfPlace(const OptimizerConfig& config, size_t n, const char* grad,
                        const float* values, float* out);

// The index of the first NaN or infinity among `n` unaligned float32s, or -1 if all are finite.
int64_t FirstNonFinite(const char* data, size_t n);

// InvalidArgument "gradient element <i> is NaN|infinite; ..." for the first non-finite element of a
// gradient, so that one bad worker step cannot poison a variable. Callers prefix the variable name.
absl::Status CheckFiniteGradient(const char* data, size_t n);
// The same for a gradient still in the pieces it arrived in.
absl::Status CheckFiniteGradient(const ByteChunks& grad);
// That error for element `index` of a gradient, whose value is `value`.
absl::Status NonFiniteError(int64_t index, float value);

}  // namespace tj
