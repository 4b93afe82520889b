// The reconcile's Services step: a headless Service per replica the job has, queued for creation
// when missing; those of replicas it no longer has (workers scaled down) deleted at once (rare).
#pragma once

#include <string>

#include "operator/controller/cluster_view.h"
#include "operator/controller/reconcile_step.h"
#include "operator/kube/kube_client.h"

namespace tj::op {

class ServicesStep : public ReconcileStep {
 public:
  ServicesStep(ClusterView& view, kube::KubeClient& client) : view_(view), client_(client) {}

  std::string Name() const override { return "Services"; }
  StepResult Run(JobReconcile& job) override;

 private:
  ClusterView& view_;
  kube::KubeClient& client_;
};

}  // namespace tj::op
