// The checks a VariableSpec or TableSpec passes once on arrival at a PS, and what comes out of
// them: shape, optimizer with defaults filled in, where a variable's start comes from. Messages do
// not repeat "variable 'x'"; the store prefixes that.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/ps/optimizer.h"
#include "coordinator/ps/tensor_spec.h"
#include "tj/v1/ps.pb.h"

namespace tj {

struct DenseVariableConfig {
  std::string name;
  // The dtype is whatever the spec said (the store rejects non-float32 after checking for an
  // existing variable, so that a dtype clash reads as one).
  TensorSpec spec;
  OptimizerConfig optimizer;
  // The logical variable a split variable belongs to; full_name is empty for a whole variable.
  v1::VariablePartition partition;
  // Index, in the logical variable, of this variable's first element; seeds the initializer.
  uint64_t first_element = 0;
};

// InvalidArgument for: no name; an initial_value that is malformed, holds NaN or infinity, or
// disagrees with a non-empty `shape`; a negative or overflowing shape; a bad initializer or
// optimizer; a partition whose rows do not fit the logical variable.
absl::StatusOr<DenseVariableConfig> CheckVariableSpec(const v1::VariableSpec& spec);

// The name whose initializer stream fills a variable: the logical variable's, so that a split
// variable starts with exactly the values the whole one would have.
inline const std::string& InitializerName(const v1::VariableSpec& spec) {
  return spec.partition().full_name().empty() ? spec.name() : spec.partition().full_name();
}

struct TableConfig {
  std::string name;
  int64_t dim = 0;
  v1::Initializer initializer;
  OptimizerConfig optimizer;
};

// InvalidArgument for: no name, dim < 1 (or absurdly large), a bad initializer or optimizer.
absl::StatusOr<TableConfig> CheckTableSpec(const v1::TableSpec& spec);

}  // namespace tj
