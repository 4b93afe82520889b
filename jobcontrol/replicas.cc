#include "jobcontrol/replicas.h"

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/defaults.h"

namespace tj {

std::string ReplicaName(std::string_view job_name, ReplicaType type, int index) {
  return absl::StrCat(std::string(job_name), "-", std::string(v1alpha1::ReplicaTypeLowerName(type)),
                      "-", index);
}

std::string ReplicaName(const v1alpha1::TrainingJob& job, ReplicaKey key) {
  return ReplicaName(job.metadata.name, key.type, key.index);
}

std::string DescribeReplica(ReplicaKey key) {
  return absl::StrCat(std::string(v1alpha1::ReplicaTypeLowerName(key.type)), " ", key.index);
}

int ReplicaCount(const v1alpha1::TrainingJobSpec& spec, ReplicaType type) {
  auto it = spec.replica_specs.find(type);
  if (it == spec.replica_specs.end()) return 0;
  return it->second.replicas.value_or(v1alpha1::kDefaultReplicas);
}

std::vector<Replica> DesiredReplicas(const v1alpha1::TrainingJob& job) {
  std::vector<Replica> replicas;
  for (ReplicaType type : v1alpha1::kReplicaTypes) {
    const int count = ReplicaCount(job.spec, type);
    for (int i = 0; i < count; ++i) {
      const ReplicaKey key{type, i};
      replicas.push_back({key, ReplicaName(job, key)});
    }
  }
  return replicas;
}

ReplicaAddresses ClusterServiceAddresses(const v1alpha1::TrainingJob& job, int port) {
  const std::string ns =
      job.metadata.namespace_name.empty() ? std::string("default") : job.metadata.namespace_name;
  ReplicaAddresses addresses;
  for (const Replica& replica : DesiredReplicas(job)) {
    addresses[replica.key] = absl::StrCat(replica.name, ".", ns, ".svc:", port);
  }
  return addresses;
}

}  // namespace tj
