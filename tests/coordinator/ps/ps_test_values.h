// Shorthands the parameter-server tests share to build variable specs, requests and read tensors
// back.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
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

inline v1::Optimizer SgdOptimizer(float lr) {
  v1::Optimizer o;
  o.mutable_sgd()->set_learning_rate(lr);
  return o;
}

inline v1::Optimizer AdagradOptimizer(float lr) {
  v1::Optimizer o;
  o.mutable_adagrad()->set_learning_rate(lr);
  return o;
}

inline v1::Optimizer AdamOptimizer(float lr) {
  v1::Optimizer o;
  o.mutable_adam()->set_learning_rate(lr);
  return o;
}

inline v1::Initializer ConstantInit(float value) {
  v1::Initializer init;
  init.set_kind(v1::Initializer::CONSTANT);
  init.set_value(value);
  return init;
}

inline v1::Initializer NormalInit(uint64_t seed, float stddev = 1.0f) {
  v1::Initializer init;
  init.set_kind(v1::Initializer::RANDOM_NORMAL);
  init.set_stddev(stddev);
  init.set_seed(seed);
  return init;
}

// A float32 variable of `shape` filled by `init`.
inline v1::VariableSpec InitializedVariable(std::string name, std::vector<int64_t> shape,
                                            v1::Initializer init, v1::Optimizer optimizer = {}) {
  v1::VariableSpec spec;
  spec.set_name(std::move(name));
  spec.mutable_shape()->Assign(shape.begin(), shape.end());
  *spec.mutable_initializer() = std::move(init);
  *spec.mutable_optimizer() = std::move(optimizer);
  return spec;
}

inline v1::TableSpec Table(std::string name, int64_t dim, v1::Initializer init = {},
                           v1::Optimizer optimizer = {}) {
  v1::TableSpec spec;
  spec.set_name(std::move(name));
  spec.set_dim(dim);
  *spec.mutable_initializer() = std::move(init);
  *spec.mutable_optimizer() = std::move(optimizer);
  return spec;
}

inline v1::CreateVariablesRequest CreateTablesRequest(std::vector<v1::TableSpec> tables) {
  v1::CreateVariablesRequest request;
  for (auto& table : tables) *request.add_tables() = std::move(table);
  return request;
}

template <typename T>
std::string RawBytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

inline v1::LookupRequest LookupRequest(
    std::vector<std::pair<std::string, std::vector<int64_t>>> lookups) {
  v1::LookupRequest request;
  for (auto& [table, ids] : lookups) {
    v1::TableIds* entry = request.add_lookups();
    entry->set_table(table);
    entry->set_ids(RawBytes(ids));
  }
  return request;
}

inline v1::PushSparseRequest SparsePush(std::string table, const std::vector<int64_t>& ids,
                                        const std::vector<float>& grads) {
  v1::PushSparseRequest request;
  v1::SparseGradients* update = request.add_updates();
  update->set_table(std::move(table));
  update->set_ids(RawBytes(ids));
  update->set_gradients(RawBytes(grads));
  return request;
}

// The float values of a tensor; fails the current test (and returns empty) if it is not float32.
inline std::vector<float> Floats(const v1::Tensor& tensor) {
  auto floats = FloatsOf(tensor);
  EXPECT_TRUE(floats.ok()) << floats.status();
  return floats.ok() ? *floats : std::vector<float>{};
}

}  // namespace tj::testing
