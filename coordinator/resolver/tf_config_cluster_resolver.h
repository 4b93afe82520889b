// TFConfigClusterResolver: reads the cluster and this process's task from TF_CONFIG, the JSON
// environment variable TensorFlow launchers (and this operator) set on every task, e.g.
//   {"cluster": {"chief": ["h:2222"], "ps": ["h:1"], "worker": ["h:3", "h:4"]},
//    "task": {"type": "worker", "index": 0}, "environment": "cloud", "rpc_layer": "grpc"}
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "coordinator/resolver/cluster_resolver.h"

namespace tj {

// Every key is optional, and a null value counts as absent. Without "cluster" the spec is empty;
// without "task" task_type()/task_id() are unset, as in TensorFlow. Stricter than TensorFlow, so a
// bad config fails at start-up with the field named (all InvalidArgument):
//  - "task", when present, needs both "type" and "index";
//  - task.type must be a job of "cluster" (TensorFlow lets an off-cluster "evaluator" through);
//  - task.index must be an integer (or a string of digits, which TensorFlow also accepts) naming
//    an existing task of that job;
//  - every address must be "host:port" and used by only one task.
class TFConfigClusterResolver final : public ClusterResolver {
 public:
  static constexpr std::string_view kEnvironmentVariable = "TF_CONFIG";

  // NotFound when TF_CONFIG is not set.
  static absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>> FromEnvironment();
  // `source_name` starts every error message.
  static absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>> FromJson(
      std::string_view json, std::string_view source_name = kEnvironmentVariable);

  // The spec as parsed at construction. TF_CONFIG is fixed for the life of a process, and reading
  // the environment again would race with any thread calling setenv.
  absl::StatusOr<ClusterSpec> cluster_spec() const override { return spec_; }

 private:
  TFConfigClusterResolver(ClusterSpec spec, std::optional<std::string> task_type,
                          std::optional<int> task_id, std::string rpc_layer,
                          std::string environment);

  ClusterSpec spec_;
};

}  // namespace tj
