// One dense float32 variable held by a parameter server. Its spec never changes after creation, so
// it is read without a lock; the values have a lock of their own so that pushes to different
// variables never wait for each other.
#pragma once

#include <shared_mutex>
#include <vector>

#include "coordinator/ps/tensor_spec.h"
#include "tj/v1/value.pb.h"

namespace tj {

class DenseVariable {
 public:
  // `initial_value` must be a float32 tensor that passed CheckWellFormed; the store checks that.
  explicit DenseVariable(const v1::Tensor& initial_value);

  DenseVariable(const DenseVariable&) = delete;
  DenseVariable& operator=(const DenseVariable&) = delete;

  const TensorSpec& spec() const { return spec_; }

  // Writes dtype, shape and the current values into `out`, replacing what it held.
  void CopyTo(v1::Tensor& out) const;

  // Adds `delta` element-wise. `delta` must be well-formed and match spec(); a mismatch here is a
  // bug in the caller and aborts rather than corrupting memory.
  void Add(const v1::Tensor& delta);

 private:
  const TensorSpec spec_;
  const size_t num_bytes_;
  // std::shared_mutex rather than absl::Mutex: Debian's Abseil is not built with TSan, which then
  // cannot see absl::Mutex and reports every guarded access as a race.
  mutable std::shared_mutex mu_;
  std::vector<float> values_;  // guarded by mu_
};

}  // namespace tj
