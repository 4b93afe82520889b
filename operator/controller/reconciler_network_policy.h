// The reconcile's NetworkPolicy step (--job-network-policy): the job's policy made (or found)
// before anything of the job is requested, so its pods never run without it; once per job and
// process (network_policy.h).
#pragma once

#include <string>

#include "operator/controller/per_job.h"
#include "operator/controller/reconcile_step.h"
#include "operator/kube/kube_client.h"

namespace tj::op {

class NetworkPolicyStep : public ReconcileStep {
 public:
  NetworkPolicyStep(kube::KubeClient& client, NetworkPolicyOptions options)
      : client_(client), options_(std::move(options)) {}

  std::string Name() const override { return "NetworkPolicy"; }
  StepResult Run(JobReconcile& job) override;
  void Forget(const std::string& key) override { confirmed_.Forget(key); }

 private:
  kube::KubeClient& client_;
  const NetworkPolicyOptions options_;
  PerJob<bool> confirmed_;  // this process made or found the job's policy
};

}  // namespace tj::op
