#include "coordinator/ps/dense_variable.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "spdlog/spdlog.h"

namespace tj {
namespace {

void CheckOrDie(bool ok, const TensorSpec& spec, const v1::Tensor& tensor, const char* what) {
  if (ok) return;
  spdlog::critical("DenseVariable::{}: {} does not fit variable {} (caller skipped validation)",
                   what, TensorSpec::Of(tensor).ToString(), spec.ToString());
  std::abort();
}

}  // namespace

DenseVariable::DenseVariable(const v1::Tensor& initial_value)
    : spec_(TensorSpec::Of(initial_value)),
      num_bytes_(static_cast<size_t>(spec_.num_elements()) * sizeof(float)),
      values_(static_cast<size_t>(spec_.num_elements())) {
  CheckOrDie(spec_.dtype == v1::DTYPE_FLOAT32 && initial_value.data().size() == num_bytes_, spec_,
             initial_value, "DenseVariable");
  // No lock yet: nothing else can see this object while it is being constructed.
  std::memcpy(values_.data(), initial_value.data().data(), num_bytes_);
}

void DenseVariable::CopyTo(v1::Tensor& out) const {
  out.set_dtype(spec_.dtype);
  out.mutable_shape()->Assign(spec_.shape.begin(), spec_.shape.end());
  std::string* data = out.mutable_data();
  // Allocate before taking the lock so that pushes wait only for the copy itself.
  data->clear();
  data->reserve(num_bytes_);
  std::shared_lock lock(mu_);
  data->assign(reinterpret_cast<const char*>(values_.data()), num_bytes_);
}

void DenseVariable::Add(const v1::Tensor& delta) {
  CheckOrDie(spec_.Matches(delta) && delta.data().size() == num_bytes_, spec_, delta, "Add");
  // The wire bytes carry no alignment guarantee, so each element is memcpy'd out; compilers turn
  // this into unaligned vector loads.
  const char* src = delta.data().data();
  std::unique_lock lock(mu_);
  float* dst = values_.data();
  const size_t n = values_.size();
  for (size_t i = 0; i < n; ++i) {
    float d;
    std::memcpy(&d, src + i * sizeof(float), sizeof(float));
    dst[i] += d;
  }
}

}  // namespace tj
