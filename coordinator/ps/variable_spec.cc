#include "coordinator/ps/variable_spec.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/ps/initializer.h"

namespace tj {
namespace {

// A table row must fit comfortably in one message alongside many others.
constexpr int64_t kMaxTableDim = 1 << 20;

absl::Status CheckShape(const TensorSpec& spec) {
  const int64_t max_elements = std::numeric_limits<int64_t>::max() / 8;
  int64_t elements = 1;
  for (int64_t d : spec.shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", spec.ToString(), " has a negative dimension"));
    }
    if (d != 0 && elements > max_elements / d) {
      return absl::InvalidArgumentError(absl::StrCat("shape ", spec.ToString(), " is too large"));
    }
    elements *= d;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DenseVariableConfig> CheckVariableSpec(const v1::VariableSpec& spec) {
  if (spec.name().empty()) {
    return absl::InvalidArgumentError("cannot create a variable without a name");
  }
  DenseVariableConfig config;
  config.name = spec.name();
  if (spec.has_initial_value()) {
    const v1::Tensor& value = spec.initial_value();
    TJ_RETURN_IF_ERROR(CheckWellFormed(value));
    config.spec = TensorSpec::Of(value);
    if (spec.shape_size() > 0 && !std::equal(spec.shape().begin(), spec.shape().end(),
                                             config.spec.shape.begin(), config.spec.shape.end())) {
      return absl::InvalidArgumentError(absl::StrCat("initial value is ", config.spec.ToString(),
                                                     " but shape says [",
                                                     absl::StrJoin(spec.shape(), ", "), "]"));
    }
    if (value.dtype() == v1::DTYPE_FLOAT32) {
      const int64_t bad = FirstNonFinite(value.data().data(), value.data().size() / sizeof(float));
      if (bad >= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("initial value element ", bad, " is not finite"));
      }
    }
  } else {
    config.spec.dtype = v1::DTYPE_FLOAT32;
    config.spec.shape.assign(spec.shape().begin(), spec.shape().end());
    TJ_RETURN_IF_ERROR(CheckShape(config.spec));
    TJ_RETURN_IF_ERROR(ValidateInitializer(spec.initializer()));
  }
  TJ_ASSIGN_OR_RETURN(config.optimizer, OptimizerConfig::FromProto(spec.optimizer()));

  if (spec.has_partition()) {
    const v1::VariablePartition& p = spec.partition();
    const int64_t rows = config.spec.shape.empty() ? -1 : config.spec.shape[0];
    if (p.full_name().empty() || rows < 0 || p.row_offset() < 0 ||
        p.row_offset() > p.full_rows() - rows) {
      return absl::InvalidArgumentError(absl::StrCat("partition (rows ", p.row_offset(), "+", rows,
                                                     " of ", p.full_rows(), " of '", p.full_name(),
                                                     "') does not fit ", config.spec.ToString()));
    }
    config.partition = p;
    const int64_t row_elements = rows == 0 ? 0 : config.spec.num_elements() / rows;
    config.first_element = static_cast<uint64_t>(p.row_offset() * row_elements);
  }
  return config;
}

absl::StatusOr<TableConfig> CheckTableSpec(const v1::TableSpec& spec) {
  if (spec.name().empty())
    return absl::InvalidArgumentError("cannot create a table without a name");
  if (spec.dim() < 1 || spec.dim() > kMaxTableDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("table dim must be in [1, ", kMaxTableDim, "], got ", spec.dim()));
  }
  TJ_RETURN_IF_ERROR(ValidateInitializer(spec.initializer()));
  TableConfig config;
  config.name = spec.name();
  config.dim = spec.dim();
  config.initializer = spec.initializer();
  TJ_ASSIGN_OR_RETURN(config.optimizer, OptimizerConfig::FromProto(spec.optimizer()));
  return config;
}

}  // namespace tj
