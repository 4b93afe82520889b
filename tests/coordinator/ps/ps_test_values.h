// Shorthands the parameter-server tests share to build variable specs, requests and read tensors
// back.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "coordinator/base/values.h"
#include "tj/v1/ps.pb.h"

namespace tj::testing {

inline v1::VariableSpec FloatVariable(std::string name, std::vector<float> values,
                                      std::vector<int64_t> shape) {
  v1::VariableSpec spec;
  spec.set_name(std::move(name));
  *spec.mutable_initial_value() = FloatTensor(values, std::move(shape));
  return spec;
}

inline v1::CreateVariablesRequest CreateRequest(std::vector<v1::VariableSpec> specs) {
  v1::CreateVariablesRequest request;
  for (auto& spec : specs) *request.add_variables() = std::move(spec);
  return request;
}

inline v1::PullRequest PullRequest(std::vector<std::string> names) {
  v1::PullRequest request;
  for (auto& name : names) request.add_names(std::move(name));
  return request;
}

inline v1::PushRequest PushRequest(std::string name, v1::Tensor delta) {
  v1::PushRequest request;
  request.add_names(std::move(name));
  *request.add_deltas() = std::move(delta);
  return request;
}

// The float values of a tensor; fails the current test (and returns empty) if it is not float32.
inline std::vector<float> Floats(const v1::Tensor& tensor) {
  auto floats = FloatsOf(tensor);
  EXPECT_TRUE(floats.ok()) << floats.status();
  return floats.ok() ? *floats : std::vector<float>{};
}

}  // namespace tj::testing
