#include "coordinator/resolver/simple_cluster_resolver.h"

#include <utility>

namespace tj {

SimpleClusterResolver::SimpleClusterResolver(ClusterSpec spec, SimpleClusterResolverOptions options)
    : ClusterResolver(std::move(options.task_type), options.task_id, std::move(options.rpc_layer),
                      std::move(options.environment)),
      spec_(std::move(spec)),
      master_(std::move(options.master)),
      num_accelerators_(std::move(options.num_accelerators)) {}

absl::StatusOr<std::string> SimpleClusterResolver::DoMaster(
    const std::optional<std::string>& task_type, std::optional<int> task_id,
    std::string_view rpc_layer) const {
  // As in TensorFlow: naming a task fully means "that task"; otherwise an explicit master wins.
  const bool task_named = task_type.has_value() && task_id.has_value();
  if (!task_named && !master_.empty()) {
    return FormatMasterUrl(master_, EffectiveRpcLayer(rpc_layer));
  }
  return MasterIn(spec_, task_type, task_id, rpc_layer);
}

}  // namespace tj
