#include "operator/controller/job_reconcile.h"

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/coordination_port.h"
#include "api/v1alpha1/labels.h"
#include "spdlog/spdlog.h"

namespace tj::op {

std::string JobNamespace(const v1alpha1::TrainingJob& job) {
  return job.metadata.namespace_name.empty() ? std::string("default") : job.metadata.namespace_name;
}

std::string JobKey(const v1alpha1::TrainingJob& job) {
  return absl::StrCat(JobNamespace(job), "/", job.metadata.name);
}

std::string ObjectName(const nlohmann::json& object) {
  const auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) return "";
  return metadata->value("name", "");
}

const ObservedPod* FindPod(const std::vector<ObservedPod>& pods, ReplicaKey key) {
  for (const ObservedPod& pod : pods) {
    if (pod.key == key) return &pod;
  }
  return nullptr;
}

const ObservedPod* RunningCoordinator(const std::vector<ObservedPod>& pods) {
  for (const ObservedPod& pod : pods) {
    if (pod.key.type == ReplicaType::kCoordinator && pod.phase == ReplicaPhase::kRunning &&
        !pod.pod_ip.empty()) {
      return &pod;
    }
  }
  return nullptr;
}

std::string CoordinatorAddress(const v1alpha1::TrainingJob& job, const ObservedPod* coordinator) {
  if (coordinator == nullptr) return "";
  return absl::StrCat(coordinator->pod_ip, ":",
                      v1alpha1::CoordinationPort(job).value_or(v1alpha1::kTrainerPort));
}

std::shared_ptr<const CoordinatorTls> TlsFor(const std::string& job_key,
                                             const ObservedPod* coordinator,
                                             const std::shared_ptr<const CoordinatorTls>& tls) {
  if (coordinator == nullptr || !coordinator->tls) return nullptr;
  if (tls == nullptr) {
    spdlog::warn("{}: {} serves TLS and the job's Secret has no control certificate", job_key,
                 coordinator->name);
  }
  return tls;
}

}  // namespace tj::op
