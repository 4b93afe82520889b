// The Reconciler's options, its result and what it counts: apart from reconciler.h so that its
// steps (reconcile_step.h) and the reconcile guard include them without the Reconciler.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "coordinator/base/std_mutex.h"
#include "coordinator/metrics/metrics_registry.h"
#include "operator/controller/checkpoint_storage.h"
#include "operator/controller/checkpoint_storage_probe.h"
#include "operator/controller/coordinator_progress.h"
#include "operator/controller/replica_objects.h"
#include "operator/controller/write_executor.h"

namespace tj::op {

// Asks a job's checkpoint bucket whether it accepts `credentials` (ProbeCheckpointBucket's
// contract); an option so the step's unit test needs no S3 server.
using BucketProbe =
    std::function<absl::Status(const v1alpha1::TrainingJob& job, const S3Credentials& credentials)>;

// Kueue admission (reconciler_admission.h, docs/kueue.md).
struct KueueOptions {
  bool enabled = false;  // --kueue: without it the kueue.x-k8s.io/queue-name label is ignored
  // While Workloads are not watched (ClusterView::WatchedWorkload; the controller watches them
  // once its informer has listed), and while a LocalQueue or priority class is missing (neither
  // is watched), a queued job is looked at again after this long.
  absl::Duration poll_interval = absl::Seconds(5);
  // How long an evicted job's coordinator may take to checkpoint and exit before its pods go.
  absl::Duration drain_timeout = absl::Minutes(2);
};

struct ReconcilerOptions {
  PodBuildOptions pods;
  KueueOptions kueue;
  // A NetworkPolicy per job (network_policy.h), made before the job's first pod is requested.
  NetworkPolicyOptions network_policy;
  // A pod still Terminating this long after its deletion deadline, on a node that is NotReady or
  // gone, is force-deleted (grace 0) so its replica can be recreated: the kubelet that would
  // confirm the kill is not coming back.
  absl::Duration terminating_pod_timeout = absl::Minutes(5);
  std::function<absl::Time()> clock = [] { return absl::Now(); };
  // Optional: tj_operator_restarts_total{reason}, tj_operator_pods_created_total, ...
  MetricsRegistry* metrics = nullptr;
  // Optional: where status.step and status.lastCheckpointStep come from; a running job is then
  // reconciled every progress_interval to refresh them.
  CoordinatorProgress* progress = nullptr;
  absl::Duration progress_interval = absl::Seconds(30);
  // Progress is read this often instead while nothing has been read from the job's coordinator
  // yet, in its pod's first 5 minutes (its server may not listen yet when its pod turns Running:
  // the first look then missed it by one progress_interval), and while the status says
  // CheckpointFailing True: the report that clears it (a save that succeeded) is usually seconds
  // away, a job that ends before the next read would keep the stale condition, and the operator
  // reads nothing after the coordinator exits.
  absl::Duration short_progress_interval = absl::Seconds(5);
  // With a gang scheduler whose PodGroup cannot be made (its CRD not installed, no permission),
  // the job is looked at again after this long: nothing watches for the CRD to appear.
  absl::Duration pod_group_retry_interval = absl::Minutes(1);
  // A job held because its checkpoint claim or bucket cannot serve is looked at again after this
  // long: claims, Secrets and buckets are not watched.
  absl::Duration checkpoint_volume_retry_interval = absl::Seconds(30);
  // How CheckpointStorageStep asks a job's bucket; a fake in unit tests.
  BucketProbe checkpoint_bucket_probe = ProbeCheckpointBucket;
  // Where creates (and a job's first status write) run; null: in the reconciling thread, before
  // Reconcile returns (tests and tools). Must outlive the Reconciler's last write.
  WriteExecutor* writes = nullptr;
  // How long unobserved creations block a job's next creates (client-go: 5 minutes).
  absl::Duration expectations_ttl = absl::Minutes(5);
  // Called (from an executor thread) when a job's dispatched writes have all answered:
  // `failed` when one failed (requeue the job with backoff: its creates are retried); otherwise
  // when an earlier failure cleared (requeue, so Created turns True again), or when an answer
  // rather than an informer event met the job's last awaited creation (requeue: no event will).
  std::function<void(const std::string& key, bool failed)> on_writes_done;
};

struct ReconcileResult {
  absl::Status status;  // not OK: requeue with backoff
  // Come back after this long even if nothing changes (activeDeadlineSeconds, TTL, a pod stuck
  // Terminating); unset: only on events.
  std::optional<absl::Duration> requeue_after;
};

// What happened, for metrics and tests (restarts by reason, notices, pods made and deleted).
struct ReconcileCounters {
  std::map<std::string, int64_t> restarts_by_reason;
  int64_t notices_queued = 0;
  int64_t pods_created = 0;
  int64_t pods_deleted = 0;
};

// ReconcileCounters shared by the steps and the executor's threads.
class ReconcileCounting {
 public:
  void Restarted(const std::string& reason) {
    StdMutexLock lock(mu_);
    ++counters_.restarts_by_reason[reason];
  }
  void NoticeQueued() {
    StdMutexLock lock(mu_);
    ++counters_.notices_queued;
  }
  void PodCreated() {
    StdMutexLock lock(mu_);
    ++counters_.pods_created;
  }
  void PodDeleted() {
    StdMutexLock lock(mu_);
    ++counters_.pods_deleted;
  }
  ReconcileCounters Snapshot() const {
    StdMutexLock lock(mu_);
    return counters_;
  }

 private:
  mutable StdMutex mu_;
  ReconcileCounters counters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tj::op
