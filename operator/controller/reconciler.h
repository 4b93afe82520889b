// Reconcile(key): brings one TrainingJob's Pods, Services and token Secret to what its spec and
// status call for, level-based and idempotent. It reads the job and its pods (ClusterView), then
// runs its steps in order over one JobReconcile (reconcile_step.h, in the manner of
// controller-runtime's sub-reconcilers), each of which may stop the reconcile or ask to come back
// later: the decision is jobcontrol's DecideJobPhase (the same `tjctl run` makes), the status is
// written before anything is acted on, so a reconcile interrupted anywhere is completed by the
// next. The steps, in order (docs/operator.md, "Reconcile"):
//   Finished, Secret, AwaitCreations, NetworkPolicy, Services, Notices, StuckPods, Decide,
//   PodGroup, CheckpointVolume, Status, Pods, Dispatch.
//
// Creates do not hold the reconcile: they are recorded as expectations and handed to the write
// executor (job_writes.h), and a job whose expected creations have not been observed yet
// (ObjectObserved, from the informers) creates nothing more.
//
// A job whose spec.managedBy names another controller gets none of that; one MultiKueue dispatches
// from this (manager) cluster gets its Workload and nothing else (multikueue_workload.h).
//
// What the steps remember (each its own, behind its own lock; rebuilt harmlessly after an
// operator restart): pods whose restart was carried out (RestartedPods), notices sent and a PS's
// last disruption (NoticesStep), the PodGroup last confirmed (PodGroupStep), the token of a
// Secret in flight (SecretStep), the last problem reported (InvalidSpec, PodGroupStep,
// CheckpointVolumeStep), the writes in flight and the last refused create (JobWrites).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "api/v1alpha1/types.h"
#include "nlohmann/json.hpp"
#include "operator/controller/cluster_view.h"
#include "operator/controller/event_sink.h"
#include "operator/controller/expectations.h"
#include "operator/controller/job_writes.h"
#include "operator/controller/multikueue_workload.h"
#include "operator/controller/preemption_notifier.h"
#include "operator/controller/reconcile_step.h"
#include "operator/controller/reconciler_invalid_spec.h"
#include "operator/controller/reconciler_options.h"
#include "operator/controller/reconciler_pods.h"
#include "operator/kube/kube_client.h"

namespace tj::op {

class NoticesStep;

class Reconciler {
 public:
  Reconciler(ClusterView& view, kube::KubeClient& client, PreemptionNotifier& notifier,
             EventSink& events, ReconcilerOptions options = {});

  // `key` is "namespace/name".
  ReconcileResult Reconcile(const std::string& key);

  // The pod informer saw the pod with this UID deleted.
  void PodDeleted(const std::string& uid);

  // An informer added `object` ("pods" or "services"; Secrets are observed when their create
  // answers, they are not watched): it satisfies the expectation
  // of its job (by the trainingjob.dev/job-name label), if one awaits it. Call before enqueuing.
  // kAwaiting: the job still awaits other creates, so reconciling it now would do nothing (the
  // last one's event, or the expiry, brings it back): the caller need not enqueue it.
  Observation ObjectObserved(const std::string& resource, const nlohmann::json& object) {
    return writes_.ObjectObserved(resource, object);
  }
  // The job informer added or updated the job: a first status write in flight is observed once
  // the cache holds the resourceVersion it produced. Call before enqueuing.
  void JobObserved(const nlohmann::json& job) { writes_.JobObserved(job); }

  const CreationExpectations& expectations() const { return writes_.expectations(); }

  ReconcileCounters counters() const { return counting_.Snapshot(); }

  // The steps' names in the order they run (tests, logs).
  std::vector<std::string> StepNames() const;

 private:
  // Drops what the steps and writes remember of the job (deleted, or not ours).
  void Forget(const std::string& key);
  ReconcileResult ReconcileValid(const nlohmann::json& job_json, v1alpha1::TrainingJob job,
                                 absl::Time now);
  // The job's own pods (controlled by its UID), observed; pods already restarted are left out.
  absl::StatusOr<std::vector<ObservedPod>> ObservePods(const v1alpha1::TrainingJob& job);

  ClusterView& view_;
  ReconcilerOptions options_;
  InlineWriteExecutor inline_writes_;
  ReconcileCounting counting_;
  RestartedPods restarted_;
  JobWrites writes_;
  InvalidSpec invalid_;
  MultiKueueWorkload multikueue_;
  std::vector<std::unique_ptr<ReconcileStep>> steps_;
  NoticesStep* notices_ = nullptr;  // one of steps_
};

}  // namespace tj::op
