// The reconcile's Secret step: the job's token Secret read (through the cluster view), completed
// by a merge patch when an older operator or a scale-up left it short (role credentials, TLS
// certificates), or, when the job has none and no create of it is awaited, a new token and CA
// queued for creation. Sets the reconcile's token and control certificate.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "operator/controller/cluster_view.h"
#include "operator/controller/per_job.h"
#include "operator/controller/reconcile_step.h"
#include "operator/kube/kube_client.h"

namespace tj::op {

class SecretStep : public ReconcileStep {
 public:
  SecretStep(ClusterView& view, kube::KubeClient& client) : view_(view), client_(client) {}

  std::string Name() const override { return "Secret"; }
  StepResult Run(JobReconcile& job) override;
  void Forget(const std::string& key) override { in_flight_.Forget(key); }

 private:
  struct JobSecret {
    std::string token;  // empty: the job runs open
    nlohmann::json data = nlohmann::json::object();  // base64 values
    std::string resource_version;
  };
  // The token and control certificate of a Secret whose create was dispatched and the cache does
  // not show yet (dropped when the create fails or finds one: the cache's is the one then).
  struct InFlight {
    std::string token;
    std::shared_ptr<const CoordinatorTls> tls;
  };

  // The job's Secret as the cluster view shows it: nullopt when there is none yet;
  // FailedPrecondition when a Secret of that name is not the job's.
  absl::StatusOr<std::optional<JobSecret>> CachedSecret(const v1alpha1::TrainingJob& job);
  // CachedSecret, completed with SecretUpgrade's keys by a merge patch when it lacks any; what it
  // returns is the Secret as patched.
  absl::StatusOr<std::optional<JobSecret>> UpToDateSecret(const v1alpha1::TrainingJob& job);
  // Generates the job's token and CA and queues the Secret's create.
  absl::Status QueueNewSecret(JobReconcile& job);

  ClusterView& view_;
  kube::KubeClient& client_;
  PerJob<InFlight> in_flight_;
};

// What the job's Secret lacks (merge-patch data; empty: nothing): the role credentials of an
// operator before them, the TLS material of one before TLS, a role certificate for replicas the
// job was scaled up to (job_tls_secret.h).
absl::StatusOr<nlohmann::json> SecretUpgrade(const v1alpha1::TrainingJob& job,
                                             const std::string& token,
                                             const nlohmann::json& data);

}  // namespace tj::op
