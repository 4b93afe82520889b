// One step of a TrainingJob's reconcile, in the manner of controller-runtime's sub-reconcilers:
// the Reconciler runs its steps in order over one JobReconcile (job_reconcile.h), each doing one
// job (the Secret, the Services, the notices, the PodGroup, ...), and each saying whether the
// reconcile goes on. Adding a concern (an admission check, say) is adding a step.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "operator/controller/job_reconcile.h"

namespace tj::op {

struct StepResult {
  enum class Next {
    kContinue,  // the next step runs
    kStop,      // the reconcile ends here, with `status` and this step's requeue_after alone
  };
  Next next = Next::kContinue;
  // Not OK with kStop: the reconcile fails at once (requeue with backoff). Not OK with kContinue:
  // the steps after it still run (the writes already decided are handed over) and the reconcile
  // fails at the end with the first such error.
  absl::Status status;
  // Come back within this long even if nothing changes; the reconcile takes the shortest of its
  // steps' (ignored when the reconcile fails: the backoff decides then).
  std::optional<absl::Duration> requeue_after;

  static StepResult Continue() { return {}; }
  static StepResult RequeueAfter(absl::Duration after) {
    return {Next::kContinue, absl::OkStatus(), after};
  }
  static StepResult Stop(std::optional<absl::Duration> requeue_after = std::nullopt) {
    return {Next::kStop, absl::OkStatus(), requeue_after};
  }
  static StepResult Fail(absl::Status status) { return {Next::kStop, std::move(status), {}}; }
  static StepResult FailAfterTheRest(absl::Status status) {
    return {Next::kContinue, std::move(status), {}};
  }
};

class ReconcileStep {
 public:
  virtual ~ReconcileStep() = default;
  // CamelCase, for logs and tests ("Secret", "PodGroup").
  virtual std::string Name() const = 0;
  virtual StepResult Run(JobReconcile& job) = 0;
  // The job ("namespace/name") was deleted: drop what the step remembers of it.
  virtual void Forget(const std::string& /*key*/) {}
};

// The shorter of two optional requeues.
inline std::optional<absl::Duration> SoonerRequeue(std::optional<absl::Duration> a,
                                                   std::optional<absl::Duration> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

}  // namespace tj::op
