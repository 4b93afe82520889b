// The reconcile's stuck-pods step: a pod still Terminating on a NotReady or vanished node
// `terminating_pod_timeout` past its deletion deadline is deleted with grace 0, so its replica is
// recreated (the kubelet that would confirm the kill is not coming back). Under replacementPolicy
// TerminatingOrFailed (workers by default) it is deleted at its deadline, without the timeout.
// Comes back when the next such pod falls due.
#pragma once

#include <string>

#include "absl/time/time.h"
#include "operator/controller/cluster_view.h"
#include "operator/controller/event_sink.h"
#include "operator/controller/reconcile_step.h"
#include "operator/kube/kube_client.h"

namespace tj::op {

class StuckPodsStep : public ReconcileStep {
 public:
  StuckPodsStep(ClusterView& view, kube::KubeClient& client, EventSink& events,
                absl::Duration terminating_pod_timeout)
      : view_(view), client_(client), events_(events), timeout_(terminating_pod_timeout) {}

  std::string Name() const override { return "StuckPods"; }
  StepResult Run(JobReconcile& job) override;

 private:
  ClusterView& view_;
  kube::KubeClient& client_;
  EventSink& events_;
  const absl::Duration timeout_;
};

}  // namespace tj::op
