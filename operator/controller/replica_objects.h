// The objects the operator creates for a job, built from its spec: one Pod and one headless
// Service per replica ("<job>-<type>-<index>") and the Secret holding the job's RPC token (and its
// TLS certificates, job_tls_secret.h). Pure functions of the job (and the token), so a reconcile
// that runs twice builds the same objects.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "api/v1alpha1/types.h"
#include "jobcontrol/replicas.h"
#include "jobcontrol/tf_config.h"
#include "nlohmann/json.hpp"

namespace tj::op {

// How the operator asks for gang scheduling (operator flag --gang-scheduler).
enum class GangScheduler { kNone, kVolcano, kSchedulerPlugins };

struct PodBuildOptions {
  GangScheduler gang_scheduler = GangScheduler::kNone;
};

// The optional NetworkPolicy per job (operator flag --job-network-policy, chart value
// networkPolicy.enabled): only the job's own pods and the operator's pods may reach them.
struct NetworkPolicyOptions {
  bool enabled = false;
  std::string operator_namespace;                         // where the operator's pods run
  std::map<std::string, std::string> operator_pod_labels;  // what selects them there
};

// The controller ownerReference to the job (controller: true, blockOwnerDeletion: true), so the
// garbage collector deletes what the job owns and informers map events back to it.
nlohmann::json ControllerReference(const v1alpha1::TrainingJob& job);

// Whether `object` has a controller ownerReference to the job's UID.
bool ControlledBy(const nlohmann::json& object, const std::string& uid);

// The labels of one replica's Pod and Service (api/v1alpha1/labels.h).
nlohmann::json ReplicaLabels(const v1alpha1::TrainingJob& job, ReplicaKey key);

// What every pod of one job shares, computed once per reconcile: the replicas' addresses and the
// cluster part of their TF_CONFIGs, so creating n pods costs O(n) each and not a map of n
// addresses per pod.
class JobPods {
 public:
  // InvalidArgument when a TF_CONFIG would not fit in an environment variable (naming the job and
  // the replica). `tls`: the pods mount their role's certificate from the job's Secret and serve
  // mutual TLS (TJ_TLS_DIR).
  static absl::StatusOr<std::shared_ptr<const JobPods>> Create(
      std::shared_ptr<const v1alpha1::TrainingJob> job, bool tls = true);

  const v1alpha1::TrainingJob& job() const { return *job_; }
  const TfConfigRenderer& tf_config() const { return tf_config_; }
  const std::string& coordinator_address() const { return coordinator_address_; }
  bool tls() const { return tls_; }

 private:
  JobPods(std::shared_ptr<const v1alpha1::TrainingJob> job, TfConfigRenderer tf_config,
          std::string coordinator_address, bool tls)
      : job_(std::move(job)),
        tf_config_(std::move(tf_config)),
        coordinator_address_(std::move(coordinator_address)),
        tls_(tls) {}

  std::shared_ptr<const v1alpha1::TrainingJob> job_;
  TfConfigRenderer tf_config_;
  std::string coordinator_address_;
  bool tls_;
};

// The replica's Pod: the replica type's template (every field the user wrote kept) with the
// operator's name, namespace, labels, ownerReference; restartPolicy Never (the operator decides
// restarts, so backoffLimit counts every one); hostname and subdomain; the trainer container (the
// first) given the job environment (TF_CONFIG, TJ_*; these win over same-named user variables),
// the trainer port and the job token volume (with the job's CA and the role's certificate, and
// TJ_TLS_DIR, when pods.tls()); on the coordinator and PS, the checkpoint claim
// (checkpoint_volume.h's AddCheckpointVolume). InvalidArgument when the template has no container.
absl::StatusOr<nlohmann::json> BuildReplicaPod(const JobPods& pods, ReplicaKey key,
                                               const PodBuildOptions& options = {});
// The same for one pod (builds the JobPods).
absl::StatusOr<nlohmann::json> BuildReplicaPod(const v1alpha1::TrainingJob& job, ReplicaKey key,
                                               const PodBuildOptions& options = {});

// The replica's headless Service (clusterIP None, publishNotReadyAddresses so the name resolves
// while the pod starts: TensorFlow-style servers dial each other before they are Ready).
nlohmann::json BuildReplicaService(const v1alpha1::TrainingJob& job, ReplicaKey key);

// The Secret's data (base64): the job's secret and every role's credential and the verifiers.
nlohmann::json JobTokenSecretData(const std::string& token);
// The job's token Secret (v1alpha1::JobTokenSecretName): the token's data and `tls_data`
// (job_tls_secret.h's NewJobTlsSecretData; an empty object for none).
nlohmann::json BuildJobTokenSecret(const v1alpha1::TrainingJob& job, const std::string& token,
                                   const nlohmann::json& tls_data);

// The job's NetworkPolicy, named as the job and owned by it: it selects the job's pods (the
// job-name label) and admits, on every port, the job's pods, and on the trainer port (2222),
// the operator's pods (notices, progress reads). Everything else is refused by it; policies add
// up, so a namespace's own policy can open more (a metrics port to Prometheus).
nlohmann::json BuildJobNetworkPolicy(const v1alpha1::TrainingJob& job,
                                     const NetworkPolicyOptions& options);

}  // namespace tj::op
