// The reconcile's decision step: the job's pods as jobcontrol observes them (a coordinator exit
// that follows a PS disruption marked disrupted), then DecideJobPhase, exactly as `tjctl run`
// decides: suspend and resume, success, deadlines, restarts and backoffLimit, scale. When pods
// are to be made, what they share (their TF_CONFIGs' cluster) is built once here; a job whose
// TF_CONFIG cannot fit in an environment variable is refused (InvalidSpec) before any pod.
#pragma once

#include <string>

#include "operator/controller/reconcile_step.h"
#include "operator/controller/reconciler_invalid_spec.h"
#include "operator/controller/reconciler_notices.h"

namespace tj::op {

class DecideStep : public ReconcileStep {
 public:
  DecideStep(NoticesStep& notices, InvalidSpec& invalid) : notices_(notices), invalid_(invalid) {}

  std::string Name() const override { return "Decide"; }
  // Sets job.decision and, when it creates or restarts pods, job.job_pods.
  StepResult Run(JobReconcile& job) override;

 private:
  NoticesStep& notices_;
  InvalidSpec& invalid_;
};

}  // namespace tj::op
