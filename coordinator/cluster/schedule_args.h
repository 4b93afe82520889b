// ScheduleArg: one argument of ClusterCoordinator::Schedule: a plain value, or PerWorkerValues (each
// worker receives its own instance). A RemoteValue is accepted by the type only to be refused with a
// clear error, as in TensorFlow: fetch it first.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/base/values.h"
#include "coordinator/closure/remote_value.h"
#include "coordinator/cluster/per_worker_resources.h"

namespace tj {

class ScheduleArg {
 public:
  ScheduleArg(v1::Value value) : arg_(std::move(value)) {}  // NOLINT: implicit by design
  ScheduleArg(int64_t v) : arg_(IntValue(v)) {}              // NOLINT
  ScheduleArg(int v) : arg_(IntValue(v)) {}                  // NOLINT
  ScheduleArg(double v) : arg_(DoubleValue(v)) {}            // NOLINT
  ScheduleArg(const char* v) : arg_(StringValue(v)) {}       // NOLINT
  ScheduleArg(std::string v) : arg_(StringValue(v)) {}       // NOLINT
  ScheduleArg(PerWorkerValues v) : arg_(std::move(v)) {}     // NOLINT
  ScheduleArg(RemoteValue v) : arg_(std::move(v)) {}         // NOLINT

  const std::variant<v1::Value, PerWorkerValues, RemoteValue>& get() const { return arg_; }

 private:
  std::variant<v1::Value, PerWorkerValues, RemoteValue> arg_;
};

// Serializes arguments once, as a tj.v1.ValueList; per-worker values become resource references.
absl::StatusOr<std::string> SerializeArgs(std::string_view function,
                                          const std::vector<ScheduleArg>& args);

}  // namespace tj
