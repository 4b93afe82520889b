// The reconcile's admission step (Kueue, docs/kueue.md), for a job labelled
// kueue.x-k8s.io/queue-name when the operator runs with --kueue: the job's Workload exists
// (kueue_workload.h), and the job runs only while Kueue admits it:
//   - not admitted yet (or its LocalQueue or priority class missing): the job is held as if
//     suspended (queue_hold: no pod, the Suspended condition saying why); a change of its
//     Workload brings it back when Workloads are watched (ClusterView::WatchedWorkload, read
//     from the cache then), else it is looked at again after poll_interval;
//   - admitted: its new pods get the admitted flavours' nodeSelector and tolerations
//     (placements);
//   - evicted (preempted by a higher priority, deactivated, ...): the running coordinator gets a
//     preemption notice and the reconcile stops there while it checkpoints and exits (at most
//     drain_timeout); then the job is held, so its pods are deleted; once none is left the
//     Workload's quota is released (as Kueue's own job integrations do) and the job waits for
//     readmission, when it resumes from that checkpoint.
// A job labelled kueue.x-k8s.io/prebuilt-workload-name (MultiKueue's copy in a worker cluster)
// uses that Workload, adopting it when nothing controls it, and never creates one.
// runPolicy.suspend maps to the Workload's spec.active. WorkloadFinishedStep, before the
// Finished step, marks the Workload Finished when the job ends, so its quota goes to the next.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "operator/controller/cluster_view.h"
#include "operator/controller/event_sink.h"
#include "operator/controller/kueue_workload.h"
#include "operator/controller/per_job.h"
#include "operator/controller/reconcile_step.h"
#include "operator/controller/reconciler_notices.h"
#include "operator/controller/reconciler_options.h"
#include "operator/kube/kube_client.h"

namespace tj::op {

class AdmissionStep : public ReconcileStep {
 public:
  AdmissionStep(ClusterView& view, kube::KubeClient& client, EventSink& events,
                NoticesStep& notices, KueueOptions options)
      : view_(view), client_(client), events_(events), notices_(notices), options_(options) {}

  std::string Name() const override { return "Admission"; }
  // Sets job.queue_hold or job.placements.
  StepResult Run(JobReconcile& job) override;
  void Forget(const std::string& key) override { memory_.Forget(key); }

 private:
  struct Memory {
    std::optional<absl::Time> eviction_seen;                  // the current eviction, since when
    bool eviction_counted = false;  // in status.preemptions (once per eviction)
    std::map<ReplicaType, std::vector<std::string>> flavors;  // of `placements`
    std::shared_ptr<const Placements> placements;
    std::string last_event;  // the last Event's reason and message: each posted once
  };
  StepResult Create(JobReconcile& job);
  StepResult Evicted(JobReconcile& job, const nlohmann::json& workload,
                     const WorkloadReading& read);
  absl::StatusOr<std::shared_ptr<const Placements>> PlacementsFor(const JobReconcile& job,
                                                                  const WorkloadReading& read);
  // Holds the job (Suspended, `reason`: `message`) and comes back after poll_interval: what it
  // waits for (a LocalQueue, a priority class, a prebuilt Workload nothing controls yet) is not
  // watched.
  StepResult Hold(JobReconcile& job, const std::string& reason, const std::string& message);
  // The same while it waits for Kueue to change the job's Workload: no look again when Workloads
  // are watched (their events bring the job back).
  StepResult AwaitWorkload(JobReconcile& job, const std::string& reason,
                           const std::string& message);
  // Whether the Workload informer has listed (ClusterView::WatchedWorkload).
  bool WorkloadWatched(const JobReconcile& job);
  // Empty when the job's LocalQueue exists; else why not.
  absl::StatusOr<std::string> QueueProblem(const JobReconcile& job);
  void EventOnce(const JobReconcile& job, EventType type, const std::string& reason,
                 const std::string& message);

  ClusterView& view_;
  kube::KubeClient& client_;
  EventSink& events_;
  NoticesStep& notices_;
  const KueueOptions options_;
  PerJob<Memory> memory_;
};

// Marks a finished job's Workload Finished (once), before FinishedStep ends the reconcile.
class WorkloadFinishedStep : public ReconcileStep {
 public:
  WorkloadFinishedStep(ClusterView& view, kube::KubeClient& client, KueueOptions options)
      : view_(view), client_(client), options_(options) {}
  std::string Name() const override { return "WorkloadFinished"; }
  StepResult Run(JobReconcile& job) override;
  void Forget(const std::string& key) override { marked_.Forget(key); }

 private:
  struct Marked {
    bool done = false;
  };
  ClusterView& view_;
  kube::KubeClient& client_;
  const KueueOptions options_;
  PerJob<Marked> marked_;
};

}  // namespace tj::op
