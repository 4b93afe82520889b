// SimpleClusterResolver: a resolver over a ClusterSpec known up front (tests, static clusters, or a
// spec computed elsewhere), like TensorFlow's SimpleClusterResolver.
#pragma once

#include <optional>
#include <string>

#include "coordinator/resolver/cluster_resolver.h"

namespace tj {

struct SimpleClusterResolverOptions {
  std::optional<std::string> task_type = std::nullopt;
  std::optional<int> task_id = std::nullopt;
  std::string rpc_layer = {};
  std::string environment = {};
  // What master() returns when the caller does not name both task_type and task_id. Empty means
  // fall back to this resolver's own task, looked up in the spec.
  std::string master = {};
  AcceleratorCounts num_accelerators = {};
};

class SimpleClusterResolver final : public ClusterResolver {
 public:
  // The task need not be in `spec`; master() reports it when it is used. (TensorFlow checks nothing
  // here either, and a resolver may be built before its own task is known.)
  explicit SimpleClusterResolver(ClusterSpec spec, SimpleClusterResolverOptions options = {});

  absl::StatusOr<ClusterSpec> cluster_spec() const override { return spec_; }

 protected:
  absl::StatusOr<std::string> DoMaster(const std::optional<std::string>& task_type,
                                       std::optional<int> task_id,
                                       std::string_view rpc_layer) const override;
  absl::StatusOr<AcceleratorCounts> DoNumAccelerators(const std::optional<std::string>& task_type,
                                                      std::optional<int> task_id) const override {
    return num_accelerators_;
  }

 private:
  ClusterSpec spec_;
  std::string master_;
  AcceleratorCounts num_accelerators_;
};

}  // namespace tj
