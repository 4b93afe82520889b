#include "coordinator/ps/tensor_spec.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tj {

TensorSpec TensorSpec::Of(const v1::Tensor& tensor) {
  return TensorSpec{tensor.dtype(),
                    std::vector<int64_t>(tensor.shape().begin(), tensor.shape().end())};
}

int64_t TensorSpec::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool TensorSpec::Matches(const v1::Tensor& tensor) const {
  return tensor.dtype() == dtype &&
         std::equal(shape.begin(), shape.end(), tensor.shape().begin(), tensor.shape().end());
}

std::string TensorSpec::ToString() const {
  return absl::StrCat(DTypeName(dtype), "[", absl::StrJoin(shape, ", "), "]");
}

size_t DTypeSize(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_FLOAT32:
      return sizeof(float);
    case v1::DTYPE_INT64:
      return sizeof(int64_t);
    default:
      return 0;
  }
}

std::string DTypeName(v1::DType dtype) {
  switch (dtype) {
    case v1::DTYPE_FLOAT32:
      return "float32";
    case v1::DTYPE_INT64:
      return "int64";
    case v1::DTYPE_UNSPECIFIED:
      return "unspecified";
    default:
      return absl::StrCat("dtype(", static_cast<int>(dtype), ")");
  }
}

absl::Status CheckWellFormed(const v1::Tensor& tensor) {
  return CheckWellFormed(tensor, tensor.data().size());
}

absl::Status CheckWellFormed(const v1::Tensor& tensor, size_t num_data_bytes) {
  const size_t element_size = DTypeSize(tensor.dtype());
  if (element_size == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor has no usable dtype (", DTypeName(tensor.dtype()), ")"));
  }
  // Bound the element count so that count * element_size cannot overflow: the shape comes off the
  // wire and may be anything.
  const int64_t max_elements =
      std::numeric_limits<int64_t>::max() / static_cast<int64_t>(element_size);
  int64_t elements = 1;
  for (int64_t d : tensor.shape()) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor shape ", TensorSpec::Of(tensor).ToString(), " has a negative dimension"));
    }
    if (d != 0 && elements > max_elements / d) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor shape ", TensorSpec::Of(tensor).ToString(), " is too large"));
    }
    elements *= d;
  }
  const int64_t expected = elements * static_cast<int64_t>(element_size);
  if (num_data_bytes != static_cast<uint64_t>(expected)) {
    return absl::InvalidArgumentError(absl::StrCat("tensor ", TensorSpec::Of(tensor).ToString(),
                                                   " carries ", num_data_bytes,
                                                   " bytes of data, expected ", expected));
  }
  return absl::OkStatus();
}

}  // namespace tj
