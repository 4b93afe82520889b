#include "coordinator/base/values.h"

#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"

static_assert(std::endian::native == std::endian::little,
              "tensors travel as raw little-endian bytes; big-endian hosts are not supported");

namespace tj {

v1::Value NoneValue() {
  v1::Value v;
  v.set_none(true);
  return v;
}
v1::Value IntValue(int64_t x) {
  v1::Value v;
  v.set_int_value(x);
  return v;
}
v1::Value DoubleValue(double x) {
  v1::Value v;
  v.set_double_value(x);
  return v;
}
v1::Value BoolValue(bool x) {
  v1::Value v;
  v.set_bool_value(x);
  return v;
}
v1::Value StringValue(std::string_view x) {
  v1::Value v;
  v.set_string_value(std::string(x));
  return v;
}
v1::Value BytesValue(std::string_view x) {
  v1::Value v;
  v.set_bytes_value(std::string(x));
  return v;
}
v1::Value ListValue(std::vector<v1::Value> values) {
  v1::Value v;
  auto* list = v.mutable_list();
  for (auto& item : values) *list->add_values() = std::move(item);
  return v;
}
v1::Value FloatTensorValue(std::span<const float> data, std::vector<int64_t> shape) {
  v1::Value v;
  *v.mutable_tensor() = FloatTensor(data, std::move(shape));
  return v;
}

std::string_view KindName(const v1::Value& value) {
  switch (value.kind_case()) {
    case v1::Value::kNone: return "none";
    case v1::Value::kBoolValue: return "bool";
    case v1::Value::kIntValue: return "int";
    case v1::Value::kDoubleValue: return "double";
    case v1::Value::kStringValue: return "string";
    case v1::Value::kBytesValue: return "bytes";
    case v1::Value::kTensor: return "tensor";
    case v1::Value::kList: return "list";
    case v1::Value::kMap: return "map";
    case v1::Value::kResource: return "resource";
    case v1::Value::KIND_NOT_SET: return "unset";
  }
  return "unknown";
}

v1::Tensor FloatTensor(std::span<const float> data, std::vector<int64_t> shape) {
  v1::Tensor t;
  t.set_dtype(v1::DTYPE_FLOAT32);
  for (int64_t d : shape) t.add_shape(d);
  t.mutable_data()->assign(reinterpret_cast<const char*>(data.data()), data.size_bytes());
  return t;
}

int64_t NumElements(const v1::Tensor& tensor) {
  int64_t n = 1;
  for (int64_t d : tensor.shape()) n *= d;
  return n;
}

absl::StatusOr<std::vector<float>> FloatsOf(const v1::Tensor& tensor) {
  if (tensor.dtype() != v1::DTYPE_FLOAT32) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a float32 tensor, got dtype ", v1::DType_Name(tensor.dtype())));
  }
  const int64_t n = NumElements(tensor);
  if (static_cast<int64_t>(tensor.data().size()) != n * static_cast<int64_t>(sizeof(float))) {
    return absl::InvalidArgumentError(absl::StrCat("tensor data has ", tensor.data().size(),
                                                   " bytes but its shape needs ", n * sizeof(float)));
  }
  std::vector<float> out(static_cast<size_t>(n));
  std::memcpy(out.data(), tensor.data().data(), tensor.data().size());
  return out;
}

}  // namespace tj
