#include "operator/controller/reconciler_status.h"

#include <algorithm>
#include <optional>

#include "api/v1alpha1/enums.h"
#include "api/v1alpha1/status_json.h"
#include "operator/controller/checkpoint_storage.h"
#include "operator/controller/job_status.h"
#include "operator/kube/resource.h"

namespace tj::op {
namespace {

using nlohmann::json;

// The last True condition: the job's state as `kubectl get tj` shows it.
std::optional<v1alpha1::ConditionType> CurrentState(const v1alpha1::TrainingJobStatus& status) {
  std::optional<v1alpha1::ConditionType> state;
  for (const v1alpha1::JobCondition& c : status.conditions) {
    if (c.status == v1alpha1::ConditionStatus::kTrue && !v1alpha1::BesideThePhase(c.type)) {
      state = c.type;
    }
  }
  return state;
}

// How long after its pod's creation a coordinator is read every short_progress_interval until a
// first read succeeds.
constexpr absl::Duration kFirstReadWindow = absl::Minutes(5);

const v1alpha1::JobCondition* CheckpointFailing(const v1alpha1::TrainingJobStatus& status) {
  for (const v1alpha1::JobCondition& c : status.conditions) {
    if (c.type == v1alpha1::ConditionType::kCheckpointFailing) return &c;
  }
  return nullptr;
}

}  // namespace

// One Warning per failed save the coordinator reports (its message names the step's objects),
// and a Normal Event when a save succeeds after them.
void StatusStep::RecordCheckpointChange(const v1alpha1::TrainingJobStatus& before,
                                        const v1alpha1::TrainingJobStatus& after,
                                        const json& job_json) {
  const v1alpha1::JobCondition* was = CheckpointFailing(before);
  const v1alpha1::JobCondition* now = CheckpointFailing(after);
  if (now == nullptr || (was != nullptr && was->status == now->status &&
                         was->message == now->message)) {
    return;
  }
  const bool failing = now->status == v1alpha1::ConditionStatus::kTrue;
  if (!failing && was == nullptr) return;
  events_.Record(job_json, failing ? EventType::kWarning : EventType::kNormal, now->reason,
                 now->message);
}

absl::Status WriteJobStatus(kube::KubeClient& client, const json& job_json,
                            const v1alpha1::TrainingJobStatus& status) {
  json object = job_json;
  object["status"] = v1alpha1::TrainingJobStatusToJson(status);
  const json& meta = job_json["metadata"];
  auto ref =
      kube::Resource("trainingjobs", meta.value("namespace", "default"), meta.value("name", ""));
  if (!ref.ok()) return ref.status();
  auto updated = client.UpdateStatus(*ref, object);
  return updated.ok() ? absl::OkStatus() : updated.status();
}

StepResult StatusStep::Run(JobReconcile& job) {
  const JobDecision& decision = job.decision;
  // A job never reconciled before (no condition yet) writes its status once, after its objects
  // were requested, counting the pods requested as active: the reconcile that then observes
  // them Pending finds nothing to write. The status-before-action rule does not concern it,
  // unless it has something to restart (pods of an earlier leader whose first status write never
  // landed): then it is written first.
  job.first_reconcile = job.status.conditions.empty() && decision.restarts.empty();
  StatusUpdate update;
  update.pods = &job.pods;
  update.decision = &decision;
  if (job.job->metadata.other.contains("generation") &&
      job.job->metadata.other["generation"].is_number_integer()) {
    update.generation = job.job->metadata.other["generation"].get<int64_t>();
  }
  update.now = job.now;
  update.job_name = job.job->metadata.name;
  update.new_preemptions = job.new_preemptions;
  update.pod_group_problem = job.pod_group_problem;
  update.checkpoint_volume_problem = job.checkpoint_volume_problem;
  update.checkpoint_storage_problem = job.checkpoint_storage_problem;
  update.create_failure = job.create_failure;
  if (job.stuck) update.stuck = &*job.stuck;
  if (job.first_reconcile && job.MayCreatePods()) update.requested = decision.to_create;
  // A coordinator that has published nothing the operator could read yet, for at most its first
  // minutes (one without a progress service, a TensorFlow program without the trainingjob
  // package, is not read every few seconds for good).
  bool first_read_due = false;
  if (options_.progress != nullptr) {
    const ObservedPod* coordinator = RunningCoordinator(job.pods);
    if (coordinator != nullptr) {
      options_.progress->Refresh(job.key, CoordinatorAddress(*job.job, coordinator), job.token,
                                 TlsFor(job.key, coordinator, job.control_tls));
    }
    std::optional<v1alpha1::TrainingProgress> p = options_.progress->Latest(job.key);
    first_read_due = !p.has_value() && coordinator != nullptr && coordinator->created_at &&
                     job.now - *coordinator->created_at < kFirstReadWindow;
    if (p.has_value()) {
      update.step = p->step;
      update.last_checkpoint_step = p->last_checkpoint_step;
      update.goodput = p->goodput;
      update.checkpoint_error = MaskAccessKeyIdsIn(p->checkpoint_error);
    }
  }
  const v1alpha1::TrainingJobStatus next = NextJobStatus(job.status, update);
  if (job.first_reconcile) {
    json object = *job.job_json;
    object["status"] = v1alpha1::TrainingJobStatusToJson(next);
    auto ref = kube::Resource("trainingjobs", JobNamespace(*job.job), job.job->metadata.name);
    if (!ref.ok()) return StepResult::Fail(ref.status());
    job.writes.push_back({"status", WriteKind::kStatus, [this, ref = *ref, object = std::move(object)] {
                            return client_.UpdateStatus(ref, object);
                          }});
  } else if (!(next == job.status)) {
    if (absl::Status s = WriteJobStatus(client_, *job.job_json, next); !s.ok()) {
      return StepResult::Fail(s);
    }
  }
  // On a first reconcile the one Event listing the objects created says it (a burst of new jobs
  // posts one Event per job).
  const bool created_event_covers = job.first_reconcile && decision.phase == JobPhase::kCreated;
  if (CurrentState(next) != CurrentState(job.status) && !created_event_covers) {
    const bool bad = decision.phase == JobPhase::kFailed || decision.phase == JobPhase::kRestarting;
    events_.Record(*job.job_json, bad ? EventType::kWarning : EventType::kNormal,
                   std::string(JobPhaseName(decision.phase)), decision.message);
  }

  RecordCheckpointChange(job.status, next, *job.job_json);

  std::optional<absl::Duration> requeue;
  if (options_.progress != nullptr && decision.phase == JobPhase::kRunning) {
    const v1alpha1::JobCondition* failing = CheckpointFailing(next);
    const bool read_sooner = first_read_due || (failing != nullptr &&
                                                failing->status == v1alpha1::ConditionStatus::kTrue);
    requeue = read_sooner ? std::min(options_.progress_interval, options_.short_progress_interval)
                          : options_.progress_interval;
  }
  const bool finished =
      decision.phase == JobPhase::kSucceeded || decision.phase == JobPhase::kFailed;
  const std::optional<int64_t> deadline = job.job->spec.run_policy.active_deadline_seconds;
  if (deadline && next.start_time && !finished) {
    const absl::Duration left = *next.start_time + absl::Seconds(*deadline) - job.now;
    requeue = SoonerRequeue(requeue, std::max(left, absl::ZeroDuration()));
  }
  return requeue ? StepResult::RequeueAfter(*requeue) : StepResult::Continue();
}

}  // namespace tj::op
