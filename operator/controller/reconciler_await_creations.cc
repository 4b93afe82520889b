#include "operator/controller/reconciler_await_creations.h"

#include <algorithm>
#include <optional>

namespace tj::op {

StepResult AwaitCreationsStep::Run(JobReconcile& job) {
  if (job.creations_settled) return StepResult::Continue();
  notices_.NotifyDisruptions(job);
  std::optional<absl::Time> expires = expectations_.ExpiresAt(job.key);
  if (!expires) return StepResult::Stop();  // observed meanwhile: its event requeued the job
  // The safety net for a lost event.
  return StepResult::Stop(std::max(*expires - job.now, absl::Seconds(1)));
}

}  // namespace tj::op
