// The reconcile's gate on creates in flight: while a job's creates are awaited (creation
// expectations), the cache may not show them yet, so nothing is decided from it (a missing pod
// may be one being created). Only notices go out; the reconcile stops and comes back when the
// expectations expire (their informer events or answers bring the job back sooner).
#pragma once

#include <string>

#include "operator/controller/expectations.h"
#include "operator/controller/reconcile_step.h"
#include "operator/controller/reconciler_notices.h"

namespace tj::op {

class AwaitCreationsStep : public ReconcileStep {
 public:
  AwaitCreationsStep(NoticesStep& notices, const CreationExpectations& expectations)
      : notices_(notices), expectations_(expectations) {}

  std::string Name() const override { return "AwaitCreations"; }
  StepResult Run(JobReconcile& job) override;

 private:
  NoticesStep& notices_;
  const CreationExpectations& expectations_;
};

}  // namespace tj::op
