#include "coordinator/resolver/cluster_resolver.h"

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/resolver/diagnostics.h"

namespace tj {

std::string FormatMasterUrl(std::string_view address, std::string_view rpc_layer) {
  if (rpc_layer.empty()) return std::string(address);
  return Cat(rpc_layer, "://", address);
}

absl::StatusOr<std::string> ClusterResolver::DoMaster(const std::optional<std::string>& task_type,
                                                      std::optional<int> task_id,
                                                      std::string_view rpc_layer) const {
  TJ_ASSIGN_OR_RETURN(ClusterSpec spec, cluster_spec());
  return MasterIn(spec, task_type, task_id, rpc_layer);
}

absl::StatusOr<AcceleratorCounts> ClusterResolver::DoNumAccelerators(
    const std::optional<std::string>& task_type, std::optional<int> task_id) const {
  return AcceleratorCounts();
}

absl::StatusOr<std::string> ClusterResolver::MasterIn(const ClusterSpec& spec,
                                                      const std::optional<std::string>& task_type,
                                                      std::optional<int> task_id,
                                                      std::string_view rpc_layer) const {
  const std::optional<std::string>& type = task_type.has_value() ? task_type : task_type_;
  const std::optional<int> id = task_id.has_value() ? task_id : task_id_;
  if (!type.has_value()) {
    return absl::FailedPreconditionError(
        "master: no task_type given and this resolver has none of its own");
  }
  if (!id.has_value()) {
    return absl::FailedPreconditionError(Cat("master: no task_id given for task_type ",
                                             Quoted(*type),
                                             " and this resolver has none of its own"));
  }
  TJ_ASSIGN_OR_RETURN(std::string address, spec.task_address(*type, *id));
  return FormatMasterUrl(address, EffectiveRpcLayer(rpc_layer));
}

}  // namespace tj
