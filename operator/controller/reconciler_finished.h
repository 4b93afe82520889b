// The reconcile's first step for a finished job (Succeeded or Failed True), which ends the
// reconcile: cleanPodPolicy applied again (no PS is left running), and the job deleted
// ttlSecondsAfterFinished after its completion (requeued for that moment).
#pragma once

#include <string>

#include "operator/controller/event_sink.h"
#include "operator/controller/reconcile_step.h"
#include "operator/controller/reconciler_options.h"
#include "operator/kube/kube_client.h"

namespace tj::op {

class FinishedStep : public ReconcileStep {
 public:
  FinishedStep(kube::KubeClient& client, EventSink& events, ReconcileCounting& counting)
      : client_(client), events_(events), counting_(counting) {}

  std::string Name() const override { return "Finished"; }
  StepResult Run(JobReconcile& job) override;

 private:
  kube::KubeClient& client_;
  EventSink& events_;
  ReconcileCounting& counting_;
};

}  // namespace tj::op
