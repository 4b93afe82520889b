// The dtype and shape of a tensor held by a parameter server: checked against a wire tensor's raw
// bytes, compared when a variable is re-created or pushed to, and printed in error messages as
// "float32[2, 3]".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tj/v1/value.pb.h"

namespace tj {

struct TensorSpec {
  v1::DType dtype = v1::DTYPE_UNSPECIFIED;
  std::vector<int64_t> shape;

  static TensorSpec Of(const v1::Tensor& tensor);

  // Product of the dimensions; only meaningful for a spec that passed CheckWellFormed.
  int64_t num_elements() const;
  // Same dtype and shape as `tensor`, compared in place so that a push allocates nothing.
  bool Matches(const v1::Tensor& tensor) const;
  std::string ToString() const;

  bool operator==(const TensorSpec&) const = default;
};

// Bytes per element; 0 for DTYPE_UNSPECIFIED and values this build does not know.
size_t DTypeSize(v1::DType dtype);

// "float32", "int64", ... for error messages.
std::string DTypeName(v1::DType dtype);

// InvalidArgument unless the dtype is known, no dimension is negative and `data` holds exactly the
// bytes the shape needs. The message does not name a variable; callers add that.
absl::Status CheckWellFormed(const v1::Tensor& tensor);
// The same for a tensor whose `num_data_bytes` of data travel outside it (tensor.data() is ignored).
absl::Status CheckWellFormed(const v1::Tensor& tensor, size_t num_data_bytes);

}  // namespace tj
