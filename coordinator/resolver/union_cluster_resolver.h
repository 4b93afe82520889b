// UnionClusterResolver: one cluster assembled from several resolvers, e.g. parameter servers from
// one source and workers from another, with TensorFlow's UnionClusterResolver merge rules.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/resolver/cluster_resolver.h"

namespace tj {

// Each set field replaces the value the union would otherwise take from its first resolver.
struct UnionClusterResolverOverrides {
  std::optional<std::string> task_type = std::nullopt;
  std::optional<int> task_id = std::nullopt;
  std::optional<std::string> rpc_layer = std::nullopt;
  std::optional<std::string> environment = std::nullopt;
};

class UnionClusterResolver final : public ClusterResolver {
 public:
  // InvalidArgument for an empty list or a null resolver. task_type, task_id, rpc_layer and
  // environment are copied from resolvers[0] now, as TensorFlow does, unless overridden.
  static absl::StatusOr<std::unique_ptr<UnionClusterResolver>> Create(
      std::vector<ClusterResolverPtr> resolvers, UnionClusterResolverOverrides overrides = {});

  // Asks every resolver afresh and merges. A job found in several resolvers gets their tasks
  // concatenated in resolver order when each lists it densely (0..n-1); if any gives it sparse
  // indices, indices are kept and must not collide. Any address used twice is InvalidArgument.
  absl::StatusOr<ClusterSpec> cluster_spec() const override;

  const std::vector<ClusterResolverPtr>& resolvers() const { return resolvers_; }

 protected:
  // A fully named task, or this union's own task when it has one, is looked up in the merged
  // spec; otherwise the first resolver answers (it may know a master without a task).
  absl::StatusOr<std::string> DoMaster(const std::optional<std::string>& task_type,
                                       std::optional<int> task_id,
                                       std::string_view rpc_layer) const override;
  // The first resolver's answer.
  absl::StatusOr<AcceleratorCounts> DoNumAccelerators(const std::optional<std::string>& task_type,
                                                      std::optional<int> task_id) const override;

 private:
  UnionClusterResolver(std::vector<ClusterResolverPtr> resolvers,
                       UnionClusterResolverOverrides overrides);

  std::vector<ClusterResolverPtr> resolvers_;
};

}  // namespace tj
