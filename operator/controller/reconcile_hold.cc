#include "operator/controller/reconcile_hold.h"

#include "spdlog/spdlog.h"

namespace tj::op {

StepResult WarnOnceAndHold(PerJob<std::string>& last, const JobReconcile& job, EventSink& events,
                           const char* reason, const std::string& problem, absl::Duration retry) {
  const bool new_problem = last.With(job.key, [&](std::string& remembered) {
    const bool is_new = !problem.empty() && remembered != problem;
    remembered = problem;
    return is_new;
  });
  if (new_problem) {
    spdlog::warn("{}: {}", job.key, problem);
    events.Record(*job.job_json, EventType::kWarning, reason, problem);
  }
  if (problem.empty()) return StepResult::Continue();
  return StepResult::RequeueAfter(retry);
}

}  // namespace tj::op
