// The reconcile's pending-pods step, after the decision: pods that cannot start on their own
// (stuck_pods.h) give the job the Stuck condition (through the status step) and one Warning Event
// each time the reason or the pods change; once runPolicy.pendingTimeoutSeconds has passed, the
// job fails (PendingTimeout) instead of waiting. A job that ended or is suspended has nothing to
// wait for.
#pragma once

#include <string>

#include "operator/controller/event_sink.h"
#include "operator/controller/reconcile_step.h"

namespace tj::op {

inline constexpr char kPendingTimeoutReason[] = "PendingTimeout";

class PendingPodsStep : public ReconcileStep {
 public:
  explicit PendingPodsStep(EventSink& events) : events_(events) {}

  std::string Name() const override { return "PendingPods"; }
  StepResult Run(JobReconcile& job) override;

 private:
  EventSink& events_;
};

}  // namespace tj::op
