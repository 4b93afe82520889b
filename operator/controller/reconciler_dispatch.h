// The reconcile's last step: the writes the steps queued (the Secret, pods, Services, a first
// status write) handed to the write executor with their expectations (job_writes.h). Comes back
// when the expectations would expire: the safety net if the informer event of the last awaited
// object is lost (a job is not enqueued for each of its objects while it awaits more).
#pragma once

#include <string>

#include "operator/controller/job_writes.h"
#include "operator/controller/reconcile_step.h"

namespace tj::op {

class DispatchStep : public ReconcileStep {
 public:
  explicit DispatchStep(JobWrites& writes) : writes_(writes) {}

  std::string Name() const override { return "Dispatch"; }
  StepResult Run(JobReconcile& job) override;

 private:
  JobWrites& writes_;
};

}  // namespace tj::op
