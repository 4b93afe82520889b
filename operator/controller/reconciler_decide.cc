#include "operator/controller/reconciler_decide.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "jobcontrol/restart_decision.h"

namespace tj::op {

StepResult DecideStep::Run(JobReconcile& job) {
  // A PS that was disrupted makes the coordinator's next failure part of the same disruption.
  const absl::Time last_ps_disruption = notices_.LastPsDisruption(job);
  // A PS that is not running: the coordinator's exit may be it giving up waiting for that PS.
  const std::vector<Replica> desired = DesiredReplicas(*job.job);
  const bool ps_not_started = std::any_of(desired.begin(), desired.end(), [&](const Replica& r) {
    if (r.key.type != ReplicaType::kPs) return false;
    const ObservedPod* pod = FindPod(job.pods, r.key);
    return pod == nullptr || pod->phase == ReplicaPhase::kPending;
  });
  JobObservation observation;
  for (const ObservedPod& pod : job.pods) {
    ReplicaObservation r{pod.key, pod.phase, pod.termination};
    if (pod.key.type == ReplicaType::kCoordinator && pod.phase == ReplicaPhase::kTerminated &&
        last_ps_disruption != absl::InfinitePast()) {
      const absl::Duration since = std::max(job.now - last_ps_disruption, absl::ZeroDuration());
      if (CoordinatorExitFollowsPsDisruption(pod.termination, since)) {
        r.termination.disrupted = true;
      }
    }
    if (pod.key.type == ReplicaType::kCoordinator && pod.phase == ReplicaPhase::kTerminated) {
      r.termination.waited_for_ps = ps_not_started;
    }
    observation.replicas.push_back(r);
    // Being taken away and still there: deleted (its name is not free yet), or given notice of a
    // disruption and not ended. Replacements may wait for it (jobcontrol/replacement.h).
    if (pod.deletion_deadline ||
        (pod.phase != ReplicaPhase::kTerminated && !pod.disruption.empty())) {
      observation.terminating.insert(pod.key);
    }
  }
  observation.restarts_so_far = job.status.restart_count;
  for (const auto& [type, status] : job.status.replica_statuses) {
    observation.restarts_by_type[type] = status.counted_restarts;
  }
  if (job.status.start_time) observation.active_for = job.now - *job.status.start_time;
  if (job.queue_hold) {
    // Held by Kueue: decided as a suspended job, with the queue's reason.
    v1alpha1::TrainingJob held = *job.job;
    held.spec.run_policy.suspend = true;
    job.decision = DecideJobPhase(held, observation);
    job.decision.reason = job.queue_hold->reason;
    job.decision.message = job.queue_hold->message;
  } else {
    job.decision = DecideJobPhase(*job.job, observation);
  }
  if (!job.PodsToCreate()) return StepResult::Continue();

  // TLS for new pods once the Secret has the job's certificates, unless a pod of the job serves
  // plaintext (made by an operator before TLS): replicas of one job must speak alike, so such a
  // job runs plaintext until all of its pods are gone.
  const bool tls_pods = job.secret_has_tls && std::all_of(job.pods.begin(), job.pods.end(),
                                                          [](const ObservedPod& p) { return p.tls; });
  absl::StatusOr<std::shared_ptr<const JobPods>> built = JobPods::Create(job.job, tls_pods);
  if (!built.ok()) {
    const ReconcileResult refused = invalid_.Reconcile(
        *job.job_json, job.key, absl::StrCat("spec.replicaSpecs: ", built.status().message()),
        job.now);
    if (!refused.status.ok()) return StepResult::Fail(refused.status);
    return StepResult::Stop(refused.requeue_after);
  }
  job.job_pods = *std::move(built);
  return StepResult::Continue();
}

}  // namespace tj::op
