// Which replicas a TrainingJob has and what they are called: "<job>-<type>-<index>" names the
// pod, the headless Service and the local process alike, so the operator and `tjctl run` agree.
#pragma once

#include <compare>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "api/v1alpha1/types.h"

namespace tj {

using v1alpha1::ReplicaType;

struct ReplicaKey {
  ReplicaType type = ReplicaType::kWorker;
  int index = 0;

  friend auto operator<=>(const ReplicaKey&, const ReplicaKey&) = default;
};

struct Replica {
  ReplicaKey key;
  std::string name;

  friend bool operator==(const Replica&, const Replica&) = default;
};

// "<job>-coordinator-0", "<job>-ps-1", "<job>-worker-12".
std::string ReplicaName(std::string_view job_name, ReplicaType type, int index);
std::string ReplicaName(const v1alpha1::TrainingJob& job, ReplicaKey key);
// "worker 3", for messages.
std::string DescribeReplica(ReplicaKey key);

// The replica count of a type (its default when unset, 0 when the type is missing).
int ReplicaCount(const v1alpha1::TrainingJobSpec& spec, ReplicaType type);

// Every replica of the job: the coordinator, then PS, then workers, each by index.
std::vector<Replica> DesiredReplicas(const v1alpha1::TrainingJob& job);

// host:port of every replica, the input of RenderTfConfig.
using ReplicaAddresses = std::map<ReplicaKey, std::string>;

// The operator's addresses: each replica's headless Service, "<replica>.<namespace>.svc:<port>"
// (namespace "default" when the job has none).
ReplicaAddresses ClusterServiceAddresses(const v1alpha1::TrainingJob& job, int port);

}  // namespace tj
