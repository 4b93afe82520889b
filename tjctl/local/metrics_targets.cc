#include "tjctl/local/metrics_targets.h"

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/enums.h"
#include "nlohmann/json.hpp"

namespace tj::local {

std::string PrometheusTargetsJson(const v1alpha1::TrainingJob& job,
                                  const ReplicaAddresses& metrics_addresses) {
  const std::string pod_namespace =
      job.metadata.namespace_name.empty() ? std::string("default") : job.metadata.namespace_name;
  nlohmann::json groups = nlohmann::json::array();
  for (const Replica& replica : DesiredReplicas(job)) {
    auto address = metrics_addresses.find(replica.key);
    if (address == metrics_addresses.end()) continue;
    groups.push_back(
        {{"targets", nlohmann::json::array({address->second})},
         {"labels",
          {{"namespace", pod_namespace},
           {"trainingjob", job.metadata.name},
           {"replica_type", std::string(v1alpha1::ReplicaTypeLowerName(replica.key.type))},
           {"replica_index", absl::StrCat(replica.key.index)},
           {"pod", replica.name}}}});
  }
  return groups.dump(2) + "\n";
}

}  // namespace tj::local
