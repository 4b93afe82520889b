#include "operator/controller/reconciler_dispatch.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace tj::op {

StepResult DispatchStep::Run(JobReconcile& job) {
  writes_.Dispatch(job.key, *job.job_json, std::move(job.writes), job.now);
  job.writes.clear();
  // Writes done inline and read back live are observed already.
  std::optional<absl::Time> expires = writes_.expectations().ExpiresAt(job.key);
  if (!expires) return StepResult::Continue();
  return StepResult::RequeueAfter(std::max(*expires - job.now, absl::Seconds(1)));
}

}  // namespace tj::op
