// The objects the operator creates for a job, built from its spec: one Pod and one headless
// Service per replica ("<job>-<type>-<index>") and the Secret holding the job's RPC token. Pure
// functions of the job (and the token), so a reconcile that runs twice builds the same objects.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "api/v1alpha1/types.h"
#include "jobcontrol/replicas.h"
#include "nlohmann/json.hpp"

namespace tj::op {

// How the operator asks for gang scheduling (operator flag --gang-scheduler).
enum class GangScheduler { kNone, kVolcano, kSchedulerPlugins };

struct PodBuildOptions {
  GangScheduler gang_scheduler = GangScheduler::kNone;
};

// The controller ownerReference to the job (controller: true, blockOwnerDeletion: true), so the
// garbage collector deletes what the job owns and informers map events back to it.
nlohmann::json ControllerReference(const v1alpha1::TrainingJob& job);

// The labels of one replica's Pod and Service (api/v1alpha1/labels.h).
nlohmann::json ReplicaLabels(const v1alpha1::TrainingJob& job, ReplicaKey key);

// The replica's Pod: the replica type's template (every field the user wrote kept) with the
// operator's name, namespace, labels, ownerReference; restartPolicy Never (the operator decides
// restarts, so backoffLimit counts every one); hostname and subdomain; the trainer container (the
// first) given the job environment (TF_CONFIG, TJ_*; these win over same-named user variables),
// the trainer port and the job token volume. InvalidArgument when the template has no container.
absl::StatusOr<nlohmann::json> BuildReplicaPod(const v1alpha1::TrainingJob& job, ReplicaKey key,
                                               const PodBuildOptions& options = {});

// The replica's headless Service (clusterIP None, publishNotReadyAddresses so the name resolves
// while the pod starts: TensorFlow-style servers dial each other before they are Ready).
nlohmann::json BuildReplicaService(const v1alpha1::TrainingJob& job, ReplicaKey key);

// The Secret's data (base64): the job's secret and every role's credential and the verifiers.
nlohmann::json JobTokenSecretData(const std::string& token);
// The job's token Secret (v1alpha1::JobTokenSecretName).
nlohmann::json BuildJobTokenSecret(const v1alpha1::TrainingJob& job, const std::string& token);

}  // namespace tj::op
