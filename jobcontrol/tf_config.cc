#include "jobcontrol/tf_config.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace tj {

std::string_view TfTaskType(ReplicaType type) {
  switch (type) {
    case ReplicaType::kCoordinator:
      return "chief";
    case ReplicaType::kPs:
      return "ps";
    case ReplicaType::kWorker:
      return "worker";
  }
  return "worker";
}

absl::StatusOr<std::string> RenderTfConfig(const v1alpha1::TrainingJob& job,
                                           const ReplicaAddresses& addresses, ReplicaType type,
                                           int index) {
  const ReplicaKey task{type, index};
  if (index < 0 || index >= ReplicaCount(job.spec, type)) {
    return absl::InvalidArgumentError(
        absl::StrCat("TF_CONFIG for ", DescribeReplica(task), ": job ", job.metadata.name, " has ",
                     ReplicaCount(job.spec, type), " ",
                     std::string(v1alpha1::ReplicaTypeName(type)), " replicas"));
  }
  nlohmann::json cluster = nlohmann::json::object();
  for (const Replica& replica : DesiredReplicas(job)) {
    auto it = addresses.find(replica.key);
    if (it == addresses.end() || it->second.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("TF_CONFIG for ", DescribeReplica(task), ": no address for ", replica.name));
    }
    // DesiredReplicas lists each type by index, so pushing keeps task i at position i.
    cluster[std::string(TfTaskType(replica.key.type))].push_back(it->second);
  }
  const nlohmann::json config = {
      {"cluster", std::move(cluster)},
      {"task", {{"type", TfTaskType(type)}, {"index", index}}},
      {"environment", "cloud"},
  };
  return config.dump();
}

}  // namespace tj
