#include "operator/controller/reconciler.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1alpha1/load.h"
#include "api/v1alpha1/managed_by.h"
#include "operator/controller/reconciler_admission.h"
#include "operator/controller/reconciler_await_creations.h"
#include "operator/controller/reconciler_checkpoint_storage.h"
#include "operator/controller/reconciler_checkpoint_volume.h"
#include "operator/controller/reconciler_decide.h"
#include "operator/controller/reconciler_pending_pods.h"
#include "operator/controller/reconciler_dispatch.h"
#include "operator/controller/reconciler_finished.h"
#include "operator/controller/reconciler_network_policy.h"
#include "operator/controller/reconciler_notices.h"
#include "operator/controller/reconciler_pod_group.h"
#include "operator/controller/reconciler_secret.h"
#include "operator/controller/reconciler_services.h"
#include "operator/controller/reconciler_status.h"
#include "operator/controller/reconciler_stuck_pods.h"
#include "spdlog/spdlog.h"

namespace tj::op {

Reconciler::Reconciler(ClusterView& view, kube::KubeClient& client, PreemptionNotifier& notifier,
                       EventSink& events, ReconcilerOptions options)
    : view_(view),
      options_(std::move(options)),
      writes_(view, events,
              options_.writes != nullptr ? *options_.writes : inline_writes_, counting_, options_),
      invalid_(view, client, events),
      multikueue_(view, client, events, options_.kueue) {
  auto notices = std::make_unique<NoticesStep>(view, notifier, events, counting_, options_.metrics);
  notices_ = notices.get();
  steps_.push_back(std::make_unique<WorkloadFinishedStep>(view, client, options_.kueue));
  steps_.push_back(std::make_unique<FinishedStep>(client, events, counting_));
  steps_.push_back(std::make_unique<SecretStep>(view, client));
  steps_.push_back(std::make_unique<AwaitCreationsStep>(*notices_, writes_.expectations()));
  steps_.push_back(std::make_unique<NetworkPolicyStep>(client, options_.network_policy));
  steps_.push_back(std::make_unique<ServicesStep>(view, client));
  steps_.push_back(std::move(notices));
  steps_.push_back(
      std::make_unique<StuckPodsStep>(view, client, events, options_.terminating_pod_timeout));
  steps_.push_back(std::make_unique<AdmissionStep>(view, client, events, *notices_, options_.kueue));
  steps_.push_back(std::make_unique<DecideStep>(*notices_, invalid_));
  steps_.push_back(std::make_unique<PendingPodsStep>(events));
  // Holds: each may keep the job's pods from being created (MayCreatePods).
  steps_.push_back(std::make_unique<PodGroupStep>(client, events, options_.pods.gang_scheduler,
                                                  options_.pod_group_retry_interval));
  steps_.push_back(std::make_unique<CheckpointVolumeStep>(
      client, events, options_.checkpoint_volume_retry_interval));
  steps_.push_back(std::make_unique<CheckpointStorageStep>(
      client, events, options_.checkpoint_bucket_probe, options_.checkpoint_volume_retry_interval));
  steps_.push_back(std::make_unique<StatusStep>(client, events, options_));
  steps_.push_back(
      std::make_unique<PodsStep>(client, events, *notices_, restarted_, counting_, options_));
  steps_.push_back(std::make_unique<DispatchStep>(writes_));
}

std::vector<std::string> Reconciler::StepNames() const {
  std::vector<std::string> names;
  for (const auto& step : steps_) names.push_back(step->Name());
  return names;
}

void Reconciler::PodDeleted(const std::string& uid) {
  restarted_.Remove(uid);
  notices_->PodDeleted(uid);
}

ReconcileResult Reconciler::Reconcile(const std::string& key) {
  const absl::Time now = options_.clock();
  const size_t slash = key.find('/');
  const std::string ns = slash == std::string::npos ? "default" : key.substr(0, slash);
  const std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  ObjectPtr job_json = view_.Job(ns, name);
  if (job_json == nullptr) {
    // Its objects go with it (ownerReferences).
    Forget(key);
    return {};
  }
  if (v1alpha1::ManagedByAnotherController(*job_json)) {
    // spec.managedBy names another controller (MultiKueue, which writes the status it copies
    // from a worker cluster): no status write, not even a problem with the spec. MultiKueue
    // dispatches a job through its Workload, which only the job kind's controller makes.
    if (multikueue_.Handles(*job_json)) return multikueue_.Reconcile(*job_json, key);
    // The field is immutable, so this job never was ours.
    Forget(key);
    return {};
  }
  v1alpha1::CheckedTrainingJob checked = v1alpha1::CheckTrainingJobJson(*job_json);
  if (!checked.ok()) {
    std::vector<std::string> problems;
    for (const v1alpha1::FieldError& error : checked.errors)
      problems.push_back(error.field.empty() ? error.message
                                             : absl::StrCat(error.field, ": ", error.message));
    return invalid_.Reconcile(*job_json, key, absl::StrJoin(problems, "; "), now);
  }
  return ReconcileValid(*job_json, std::move(*checked.job), now);
}

void Reconciler::Forget(const std::string& key) {
  for (const auto& step : steps_) step->Forget(key);
  writes_.Forget(key);
  invalid_.Forget(key);
  multikueue_.Forget(key);
  if (options_.progress != nullptr) options_.progress->Forget(key);
}

absl::StatusOr<std::vector<ObservedPod>> Reconciler::ObservePods(const v1alpha1::TrainingJob& job) {
  auto objects = view_.PodsOf(JobNamespace(job), job.metadata.name);
  if (!objects.ok()) return objects.status();
  std::vector<ObservedPod> pods;
  for (const ObjectPtr& object : *objects) {
    if (!ControlledBy(*object, job.metadata.uid.value_or(""))) continue;
    absl::StatusOr<ObservedPod> pod = ObservePod(*object);
    if (!pod.ok()) {
      spdlog::warn("{}: ignoring pod: {}", JobKey(job), std::string(pod.status().message()));
      continue;
    }
    if (restarted_.Contains(pod->uid)) continue;  // already handled; its deletion is coming
    pods.push_back(std::move(*pod));
  }
  return pods;
}

ReconcileResult Reconciler::ReconcileValid(const nlohmann::json& job_json,
                                           v1alpha1::TrainingJob job, absl::Time now) {
  JobReconcile reconcile;
  reconcile.key = JobKey(job);
  reconcile.now = now;
  reconcile.job_json = &job_json;
  // Before the cache is read: an expectation observed after this point is in the cache already
  // (the informers update their cache before they report).
  reconcile.creations_settled = writes_.expectations().Satisfied(reconcile.key, now);
  reconcile.status = job.status.value_or(v1alpha1::TrainingJobStatus{});
  reconcile.job = std::make_shared<const v1alpha1::TrainingJob>(std::move(job));
  absl::StatusOr<std::vector<ObservedPod>> pods = ObservePods(*reconcile.job);
  if (!pods.ok()) return {pods.status(), std::nullopt};
  reconcile.pods = *std::move(pods);
  invalid_.Valid(reconcile.key);
  reconcile.create_failure = writes_.CreateFailure(reconcile.key);

  absl::Status deferred;
  std::optional<absl::Duration> requeue;
  for (const auto& step : steps_) {
    StepResult result = step->Run(reconcile);
    if (!result.status.ok()) {
      spdlog::debug("{}: step {}: {}", reconcile.key, step->Name(), result.status.ToString());
      if (result.next == StepResult::Next::kStop) return {result.status, std::nullopt};
      if (deferred.ok()) deferred = result.status;
    }
    if (result.next == StepResult::Next::kStop) return {absl::OkStatus(), result.requeue_after};
    requeue = SoonerRequeue(requeue, result.requeue_after);
  }
  if (!deferred.ok()) return {deferred, std::nullopt};
  return {absl::OkStatus(), requeue};
}

}  // namespace tj::op
