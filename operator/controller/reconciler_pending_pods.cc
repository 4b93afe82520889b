#include "operator/controller/reconciler_pending_pods.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/defaults.h"
#include "operator/controller/stuck_pods.h"

namespace tj::op {
namespace {

using v1alpha1::ConditionStatus;
using v1alpha1::ConditionType;

// Whether the status already says this: the Event was posted when it first did.
bool AlreadyReported(const v1alpha1::TrainingJobStatus& status, const StuckJudgement& stuck) {
  return std::any_of(status.conditions.begin(), status.conditions.end(),
                     [&](const v1alpha1::JobCondition& c) {
                       return c.type == ConditionType::kStuck &&
                              c.status == ConditionStatus::kTrue && c.reason == stuck.reason &&
                              c.message == stuck.message;
                     });
}

// The job fails as DecideJobPhase fails one: cleanPodPolicy stops what is left, nothing else
// is created or restarted, the restart count stays.
JobDecision PendingTimeout(const JobReconcile& job, int64_t timeout_seconds,
                           const StuckJudgement& stuck) {
  JobDecision failed;
  failed.phase = JobPhase::kFailed;
  failed.reason = kPendingTimeoutReason;
  failed.message = absl::StrCat("runPolicy.pendingTimeoutSeconds (", timeout_seconds,
                                ") passed and ", stuck.message);
  std::vector<ReplicaObservation> replicas;
  for (const ObservedPod& pod : job.pods) replicas.push_back({pod.key, pod.phase, pod.termination});
  failed.to_stop = ReplicasToClean(
      job.job->spec.run_policy.clean_pod_policy.value_or(v1alpha1::kDefaultCleanPodPolicy),
      replicas);
  failed.restart_count = job.status.restart_count;
  return failed;
}

}  // namespace

StepResult PendingPodsStep::Run(JobReconcile& job) {
  const JobPhase phase = job.decision.phase;
  if (phase == JobPhase::kSucceeded || phase == JobPhase::kFailed ||
      phase == JobPhase::kSuspended) {
    return StepResult::Continue();
  }
  const std::optional<int64_t> timeout_seconds =
      job.job->spec.run_policy.pending_timeout_seconds;
  std::optional<absl::Duration> timeout;
  if (timeout_seconds) timeout = absl::Seconds(*timeout_seconds);
  job.stuck = JudgeStuckPods(job.pods, job.now, timeout);
  if (!job.stuck) return StepResult::Continue();
  if (!AlreadyReported(job.status, *job.stuck)) {
    events_.Record(*job.job_json, EventType::kWarning, job.stuck->reason, job.stuck->message);
  }
  if (job.stuck->timed_out) {
    job.decision = PendingTimeout(job, *timeout_seconds, *job.stuck);
    return StepResult::Continue();
  }
  // Pod changes bring the job back; the timeout passing does not.
  return job.stuck->time_left ? StepResult::RequeueAfter(*job.stuck->time_left)
                              : StepResult::Continue();
}

}  // namespace tj::op
