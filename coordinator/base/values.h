// Building and reading tj.v1.Value, the type of function arguments and results.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tj/v1/value.pb.h"

namespace tj {

v1::Value NoneValue();
v1::Value IntValue(int64_t v);
v1::Value DoubleValue(double v);
v1::Value BoolValue(bool v);
v1::Value StringValue(std::string_view v);
v1::Value BytesValue(std::string_view v);
v1::Value ListValue(std::vector<v1::Value> values);
v1::Value FloatTensorValue(std::span<const float> data, std::vector<int64_t> shape);

// The name of the kind a value holds ("int", "string", ...), for error messages.
std::string_view KindName(const v1::Value& value);

// Raw little-endian float tensor helpers. The project only runs on little-endian hosts (checked at
// compile time), so these are plain copies.
v1::Tensor FloatTensor(std::span<const float> data, std::vector<int64_t> shape);
absl::StatusOr<std::vector<float>> FloatsOf(const v1::Tensor& tensor);
int64_t NumElements(const v1::Tensor& tensor);

}  // namespace tj
