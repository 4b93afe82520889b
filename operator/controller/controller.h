// The TrainingJob controller: informers on TrainingJobs and on the Pods and Services the operator
// owns (and on Nodes, for node loss; with --kueue on the Workloads it owns), the jobs' Secrets read by name (JobSecrets: never listed or
// watched), a rate-limited work queue of job keys, and worker
// threads calling Reconciler::Reconcile. Events on owned objects enqueue their owner; a failed
// reconcile (an error, or an exception thrown by one job's odd JSON) is retried with per-key
// exponential backoff, counted in tj_operator_reconcile_errors_total and reported as a Warning
// Event on the job, while the other jobs keep being served; a result's requeue_after comes back
// on its own (deadlines, TTL), not only on the next event.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "coordinator/metrics/metrics_registry.h"
#include "operator/controller/event_sink.h"
#include "operator/controller/job_metrics.h"
#include "operator/controller/job_secrets.h"
#include "operator/controller/preemption_notifier.h"
#include "operator/controller/reconcile_guard.h"
#include "operator/controller/reconciler.h"
#include "operator/controller/write_executor.h"
#include "operator/kube/cancellation.h"
#include "operator/kube/informer.h"
#include "operator/kube/kube_client.h"
#include "operator/kube/work_queue.h"

namespace tj::op {

struct ControllerOptions {
  std::string namespace_name;  // "" = every namespace
  int workers = 4;
  ReconcilerOptions reconciler;  // its writes and on_writes_done are the controller's
  // API writes in flight at once for reconciles (creates, first status writes), and how many may
  // wait for one (beyond that a reconcile waits to hand its writes over).
  int write_concurrency = 16;
  size_t write_queue_capacity = 16384;
  // Every job is reconciled at least this often (a level-triggered safety net).
  absl::Duration resync_period = absl::Minutes(5);
  // Nodes are watched for node loss; without permission to list them the controller still runs
  // (node loss is then seen only through pod status and deletion).
  bool watch_nodes = true;
  // A job's Secret read by name is read again after this long (a hand edit is seen).
  absl::Duration secret_refresh = absl::Minutes(10);
};

class Controller {
 public:
  Controller(std::shared_ptr<kube::KubeClient> client, ControllerOptions options,
             MetricsRegistry* metrics, EventSink& events, PreemptionNotifier& notifier);
  ~Controller();

  // Starts the informers, waits for their first lists, runs the workers until `stop` is
  // cancelled, then drains the queue (reconciles in flight finish) and stops everything.
  absl::Status Run(const std::shared_ptr<kube::Cancellation>& stop);

  // The job, pod and service informers have listed once (for /readyz).
  bool Synced() const { return synced_.load(); }

  const Reconciler& reconciler() const { return reconciler_; }

 private:
  class CacheView;

  void EnqueueJob(const kube::ObjectPtr& job);
  void EnqueueOwner(const kube::ObjectPtr& object);
  void OnNodeChange(const kube::ObjectPtr& old_node, const kube::ObjectPtr& new_node);
  void Work();
  // A failed reconcile of `key`: counted, logged, a Warning Event on the job (conflicts excepted),
  // and the key requeued with its backoff.
  void ReportFailure(const std::string& key, const GuardedReconcile& guarded);
  // The work queues' depths, every second while acting.
  void RefreshGauges();
  // The registry's collector: the figures of every job (JobMetrics, tj_operator_jobs) as of the
  // scrape.
  void CollectJobGauges();

  std::shared_ptr<kube::KubeClient> client_;
  ControllerOptions options_;
  MetricsRegistry* metrics_;
  std::unique_ptr<JobMetrics> job_metrics_;  // with metrics_; only CollectJobGauges uses it
  std::optional<MetricsRegistry::CollectorId> collector_;
  EventSink& events_;
  std::unique_ptr<kube::Informer> jobs_;
  std::unique_ptr<kube::Informer> pods_;
  std::unique_ptr<kube::Informer> services_;
  std::unique_ptr<kube::Informer> nodes_;
  // With --kueue: the Workloads TrainingJobs control. Not waited for at start: without Kueue
  // installed (or the RBAC) it never lists, and the admission step then GETs and polls.
  std::unique_ptr<kube::Informer> workloads_;
  JobSecrets secrets_;
  std::unique_ptr<CacheView> view_;
  std::unique_ptr<ThreadPoolWriteExecutor> writes_;  // before reconciler_: it writes through it
  Reconciler reconciler_;
  kube::WorkQueue queue_;
  std::atomic<bool> synced_{false};
  std::atomic<bool> stopping_{false};  // Run is stopping: queued keys are not reconciled
};

}  // namespace tj::op
