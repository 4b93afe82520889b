#include "operator/controller/reconciler_finished.h"

#include <optional>
#include <vector>

#include "api/v1alpha1/defaults.h"
#include "operator/controller/job_status.h"
#include "operator/controller/reconciler_pods.h"
#include "operator/kube/resource.h"
#include "spdlog/spdlog.h"

namespace tj::op {

StepResult FinishedStep::Run(JobReconcile& job) {
  if (!JobFinished(job.status)) return StepResult::Continue();
  const v1alpha1::TrainingJob& spec = *job.job;
  std::vector<ReplicaObservation> replicas;
  for (const ObservedPod& pod : job.pods) replicas.push_back({pod.key, pod.phase, pod.termination});
  absl::Status first_error;
  for (ReplicaKey key : ReplicasToClean(
           spec.spec.run_policy.clean_pod_policy.value_or(v1alpha1::kDefaultCleanPodPolicy),
           replicas)) {
    const ObservedPod* pod = FindPod(job.pods, key);
    if (pod == nullptr || pod->deletion_deadline) continue;
    absl::Status s =
        DeleteJobPod(client_, events_, counting_, job, *pod, "the job ended (cleanPodPolicy)");
    if (!s.ok() && first_error.ok()) first_error = s;
  }
  if (!first_error.ok()) return StepResult::Fail(first_error);

  const std::optional<int32_t> ttl = spec.spec.run_policy.ttl_seconds_after_finished;
  if (!ttl || !job.status.completion_time) return StepResult::Stop();
  const absl::Time due = *job.status.completion_time + absl::Seconds(*ttl);
  if (job.now < due) return StepResult::Stop(due - job.now);
  auto ref = kube::Resource("trainingjobs", JobNamespace(spec), spec.metadata.name);
  if (!ref.ok()) return StepResult::Fail(ref.status());
  kube::DeleteOptions options;
  options.propagation_policy = "Background";
  options.precondition_uid = spec.metadata.uid;
  auto deleted = client_.Delete(*ref, options);
  if (!deleted.ok() && !absl::IsNotFound(deleted.status())) {
    return StepResult::Fail(deleted.status());
  }
  spdlog::info("{}: deleted {} s after it finished (ttlSecondsAfterFinished)", job.key, *ttl);
  return StepResult::Stop();
}

}  // namespace tj::op
