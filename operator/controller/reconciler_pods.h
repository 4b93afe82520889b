// The reconcile's pods step, after the status is written: deletes what the decision stops (a
// worker removed by a scale-down gets its notice first, so the coordinator drains it), deletes
// each restarted pod (UID precondition) and remembers it until its deletion is seen (a stale
// cache never counts one exit twice), and queues the pods to create: successors of restarted
// replicas and missing ones, unless a step before holds the job (MayCreatePods).
#pragma once

#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"
#include "operator/controller/event_sink.h"
#include "operator/controller/reconcile_step.h"
#include "operator/controller/reconciler_notices.h"
#include "operator/controller/reconciler_options.h"
#include "operator/kube/kube_client.h"

namespace tj::op {

// Pods whose restart was carried out (by UID), until the pod informer reports them gone.
class RestartedPods {
 public:
  void Add(const std::string& uid) {
    StdMutexLock lock(mu_);
    uids_.insert(uid);
  }
  bool Contains(const std::string& uid) const {
    StdMutexLock lock(mu_);
    return uids_.contains(uid);
  }
  void Remove(const std::string& uid) {
    StdMutexLock lock(mu_);
    uids_.erase(uid);
  }

 private:
  mutable StdMutex mu_;
  std::set<std::string> uids_ ABSL_GUARDED_BY(mu_);
};

class PodsStep : public ReconcileStep {
 public:
  PodsStep(kube::KubeClient& client, EventSink& events, NoticesStep& notices,
           RestartedPods& restarted, ReconcileCounting& counting, const ReconcilerOptions& options)
      : client_(client),
        events_(events),
        notices_(notices),
        restarted_(restarted),
        counting_(counting),
        options_(options) {}

  std::string Name() const override { return "Pods"; }
  // A failed delete does not stop the creates already decided: FailAfterTheRest.
  StepResult Run(JobReconcile& job) override;

 private:
  Write PodWrite(const JobReconcile& job, ReplicaKey key);

  kube::KubeClient& client_;
  EventSink& events_;
  NoticesStep& notices_;
  RestartedPods& restarted_;
  ReconcileCounting& counting_;
  const ReconcilerOptions& options_;
};

// Deletes the job's pod (UID precondition) and posts a DeletedPod Event saying `why`.
absl::Status DeleteJobPod(kube::KubeClient& client, EventSink& events, ReconcileCounting& counting,
                          const JobReconcile& job, const ObservedPod& pod, const std::string& why);

}  // namespace tj::op
