// Args: the typed view a registered function gets of its arguments. Every accessor checks the index
// and the type and returns an error naming the function, the argument and both types, so a caller
// passing the wrong thing learns exactly what.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "coordinator/worker/resource.h"
#include "tj/v1/value.pb.h"

namespace tj {

class Args {
 public:
  Args(std::string_view function, v1::ValueList values,
       std::vector<std::shared_ptr<Resource>> resources)
      : function_(function), values_(std::move(values)), resources_(std::move(resources)) {}

  size_t size() const { return static_cast<size_t>(values_.values_size()); }
  absl::Status ExpectCount(size_t n) const;

  absl::StatusOr<int64_t> Int(size_t i) const;
  absl::StatusOr<double> Double(size_t i) const;  // ints are widened
  absl::StatusOr<bool> Bool(size_t i) const;
  absl::StatusOr<std::string_view> String(size_t i) const;
  absl::StatusOr<std::string_view> Bytes(size_t i) const;
  absl::StatusOr<const v1::Tensor*> Tensor(size_t i) const;
  absl::StatusOr<const v1::Value*> Raw(size_t i) const;

  // The worker's own instance of a per-worker resource passed as argument i.
  template <typename T>
  absl::StatusOr<std::shared_ptr<T>> Resource(size_t i) const {
    auto value = ValueAt(i, v1::Value::kResource, "resource");
    if (!value.ok()) return value.status();
    auto typed = std::dynamic_pointer_cast<T>(resources_[i]);
    if (typed == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("argument ", i, " of function '", function_,
                                                     "': the resource has type ",
                                                     resources_[i]->type_name(),
                                                     ", not the type the function expects"));
    }
    return typed;
  }

 private:
  absl::StatusOr<const v1::Value*> ValueAt(size_t i, v1::Value::KindCase kind,
                                           std::string_view kind_name) const;

  std::string function_;
  v1::ValueList values_;
  std::vector<std::shared_ptr<tj::Resource>> resources_;  // parallel to values_; null if not a resource
};

}  // namespace tj
