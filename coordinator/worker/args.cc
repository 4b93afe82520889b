#include "coordinator/worker/args.h"

#include "coordinator/base/values.h"

namespace tj {

absl::Status Args::ExpectCount(size_t n) const {
  if (size() == n) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("function '", function_, "' takes ", n,
                                                 " argument(s), got ", size()));
}

absl::StatusOr<const v1::Value*> Args::ValueAt(size_t i, v1::Value::KindCase kind,
                                               std::string_view kind_name) const {
  if (i >= size()) {
    return absl::InvalidArgumentError(absl::StrCat("function '", function_, "' needs argument ", i,
                                                   " but got only ", size(), " argument(s)"));
  }
  const v1::Value& value = values_.values(static_cast<int>(i));
  if (value.kind_case() != kind) {
    return absl::InvalidArgumentError(absl::StrCat("argument ", i, " of function '", function_,
                                                   "' must be ", std::string(kind_name), ", got ",
                                                   std::string(KindName(value))));
  }
  return &value;
}

absl::StatusOr<int64_t> Args::Int(size_t i) const {
  auto v = ValueAt(i, v1::Value::kIntValue, "int");
  if (!v.ok()) return v.status();
  return (*v)->int_value();
}

absl::StatusOr<double> Args::Double(size_t i) const {
  if (i < size() && values_.values(static_cast<int>(i)).kind_case() == v1::Value::kIntValue) {
    return static_cast<double>(values_.values(static_cast<int>(i)).int_value());
  }
  auto v = ValueAt(i, v1::Value::kDoubleValue, "double");
  if (!v.ok()) return v.status();
  return (*v)->double_value();
}

absl::StatusOr<bool> Args::Bool(size_t i) const {
  auto v = ValueAt(i, v1::Value::kBoolValue, "bool");
  if (!v.ok()) return v.status();
  return (*v)->bool_value();
}

absl::StatusOr<std::string_view> Args::String(size_t i) const {
  auto v = ValueAt(i, v1::Value::kStringValue, "string");
  if (!v.ok()) return v.status();
  return std::string_view((*v)->string_value());
}

absl::StatusOr<std::string_view> Args::Bytes(size_t i) const {
  auto v = ValueAt(i, v1::Value::kBytesValue, "bytes");
  if (!v.ok()) return v.status();
  return std::string_view((*v)->bytes_value());
}

absl::StatusOr<const v1::Tensor*> Args::Tensor(size_t i) const {
  auto v = ValueAt(i, v1::Value::kTensor, "tensor");
  if (!v.ok()) return v.status();
  return &(*v)->tensor();
}

absl::StatusOr<const v1::Value*> Args::Raw(size_t i) const {
  if (i >= size()) {
    return absl::InvalidArgumentError(absl::StrCat("function '", function_, "' needs argument ", i,
                                                   " but got only ", size(), " argument(s)"));
  }
  return &values_.values(static_cast<int>(i));
}

}  // namespace tj
