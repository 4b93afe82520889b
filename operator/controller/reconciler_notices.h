// The reconcile's notices step: preemption signals of the job's pods (DisruptionTarget, a
// deletion, the node NotReady or gone, a kubelet eviction) become PreemptionNotices to the
// running coordinator, once per pod and signal, without blocking (preemption_notifier.h). Also
// the notice a worker removed by a scale-down gets before its pod is deleted, and when a PS of
// the job was last disrupted (a coordinator exit that follows is part of the same disruption).
#pragma once

#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "coordinator/base/std_mutex.h"
#include "coordinator/metrics/metrics_registry.h"
#include "operator/controller/cluster_view.h"
#include "operator/controller/event_sink.h"
#include "operator/controller/per_job.h"
#include "operator/controller/preemption_notifier.h"
#include "operator/controller/reconcile_step.h"
#include "operator/controller/reconciler_options.h"

namespace tj::op {

// The notice's reason for a worker the coordinator is to drain: the job was scaled down.
inline constexpr char kScaleDownNoticeReason[] = "ScaleDown";

class NoticesStep : public ReconcileStep {
 public:
  NoticesStep(ClusterView& view, PreemptionNotifier& notifier, EventSink& events,
              ReconcileCounting& counting, MetricsRegistry* metrics)
      : view_(view), notifier_(notifier), events_(events), counting_(counting), metrics_(metrics) {}

  std::string Name() const override { return "Notices"; }
  // Sets job.new_preemptions.
  StepResult Run(JobReconcile& job) override;
  void Forget(const std::string& key) override { last_ps_disruption_.Forget(key); }

  // Notices for every pod of the job with a preemption signal; returns how many signals are new
  // (each pod and signal counts once).
  int NotifyDisruptions(const JobReconcile& job);
  // `pod`, a running worker, is about to be deleted by a scale-down: the coordinator drains it.
  void NotifyScaleDown(const JobReconcile& job, const ObservedPod& pod);
  // Kueue evicted the job (`signal`: "KueueEviction/<reason>"): the coordinator checkpoints at its
  // next step boundary and exits before the job's pods are removed. Once per coordinator pod and
  // signal.
  void NotifyEviction(const JobReconcile& job, const ObservedPod& coordinator,
                      const std::string& signal);
  // Records now as the job's last PS disruption when a PS pod of the job is disrupted, and
  // returns the last one (InfinitePast: never). Observation times are on the operator's clock:
  // kubelets' timestamps may be skewed.
  absl::Time LastPsDisruption(const JobReconcile& job);
  // The operator deletes the pod itself (the job held, ended, or scaled down): its deletion is no
  // disruption, so the signals a later reconcile sees while it terminates ("Deleted") are still
  // sent to the coordinator but not counted in status.preemptions (which counted 0 to 3 for one
  // Kueue preemption, as many of the job's pods as a reconcile happened to see Terminating).
  void DeletingPod(const std::string& uid);
  // The pod informer saw the pod deleted: its signals are forgotten with it.
  void PodDeleted(const std::string& uid);

 private:
  enum class Cause { kDisruption, kScaleDown };
  // Sends one notice unless this pod and signal were notified already; true when new.
  bool Notify(const JobReconcile& job, const ObservedPod& pod, const std::string& signal,
              Cause cause);

  struct PsDisruption {
    absl::Time at = absl::InfinitePast();
  };

  ClusterView& view_;
  PreemptionNotifier& notifier_;
  EventSink& events_;
  ReconcileCounting& counting_;
  MetricsRegistry* metrics_;
  StdMutex mu_;
  std::set<std::string> notified_ ABSL_GUARDED_BY(mu_);  // pod UID + "|" + signal
  std::set<std::string> deleting_ ABSL_GUARDED_BY(mu_);  // UIDs of pods the operator deletes
  PerJob<PsDisruption> last_ps_disruption_;
};

}  // namespace tj::op
