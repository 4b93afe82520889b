// Reconcile(key): brings one TrainingJob's Pods, Services and token Secret to what its spec and
// status call for, level-based and idempotent: it reads the world (ClusterView), decides with
// jobcontrol's DecideJobPhase (the same decisions `tjctl run` makes), writes the status first and
// then acts (creates, deletes), so a reconcile interrupted anywhere is completed by the next.
//
// Creates do not hold the reconcile: it records them as expectations (CreationExpectations) and
// hands them to the write executor (options.writes), and a job whose expected creations have not
// been observed yet (ObjectObserved, from the informers) creates nothing more. A job's first
// reconcile writes its status once, after its objects were requested, on the executor too.
// Deletes and later status writes stay in the reconcile (the status must be written before a
// restart is carried out, so a restart is never counted twice).
//
// State kept in memory, rebuilt harmlessly after an operator restart:
//  - pods whose restart was already carried out (their UID), until the pod informer reports them
//    gone, so a stale cache never counts one exit twice;
//  - notices already sent (pod UID + signal), so each signal reaches the coordinator once;
//  - when a PS of each job was last disrupted, so the coordinator's exit that follows is not
//    counted toward backoffLimit (jobcontrol::CoordinatorExitFollowsPsDisruption);
//  - with a gang scheduler, the PodGroup last confirmed for each job, so an unchanged job with no
//    pod to create costs no PodGroup request.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "api/v1alpha1/types.h"
#include "coordinator/metrics/metrics_registry.h"
#include "jobcontrol/job_phase.h"
#include "operator/controller/cluster_view.h"
#include "operator/controller/coordinator_progress.h"
#include "operator/controller/event_sink.h"
#include "operator/controller/expectations.h"
#include "operator/controller/job_status.h"
#include "operator/controller/observed_pod.h"
#include "operator/controller/preemption_notifier.h"
#include "operator/controller/replica_objects.h"
#include "operator/controller/write_executor.h"
#include "operator/kube/kube_client.h"
#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"

namespace tj::op {

struct ReconcilerOptions {
  PodBuildOptions pods;
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
  // With a gang scheduler whose PodGroup cannot be made (its CRD not installed, no permission),
  // the job is looked at again after this long: nothing watches for the CRD to appear.
  absl::Duration pod_group_retry_interval = absl::Minutes(1);
  // A job held because its checkpoint claim or bucket cannot serve is looked at again after this
  // long: claims, Secrets and buckets are not watched.
  absl::Duration checkpoint_volume_retry_interval = absl::Seconds(30);
  // Where creates (and a job's first status write) run; null: in the reconciling thread, before
  // Reconcile returns (tests and tools). Must outlive the Reconciler's last write.
  WriteExecutor* writes = nullptr;
  // How long unobserved creations block a job's next creates (client-go: 5 minutes).
  absl::Duration expectations_ttl = absl::Minutes(5);
  // Called (from an executor thread) when a job's dispatched writes have all answered:
  // `failed` when one failed (requeue the job with backoff: its creates are retried); otherwise
  // only when an earlier failure cleared (requeue, so Created turns True again).
  std::function<void(const std::string& key, bool failed)> on_writes_done;
};

// What happened, for metrics (restarts by reason, notices, API errors).
struct ReconcileCounters {
  std::map<std::string, int64_t> restarts_by_reason;
  int64_t notices_queued = 0;
  int64_t pods_created = 0;
  int64_t pods_deleted = 0;
};

struct ReconcileResult {
  absl::Status status;  // not OK: requeue with backoff
  // Come back after this long even if nothing changes (activeDeadlineSeconds, TTL, a pod stuck
  // Terminating); unset: only on events.
  std::optional<absl::Duration> requeue_after;
};

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
  Observation ObjectObserved(const std::string& resource, const nlohmann::json& object);
  // The job informer added or updated the job: a first status write in flight is observed once
  // the cache holds the resourceVersion it produced. Call before enqueuing.
  void JobObserved(const nlohmann::json& job);

  const CreationExpectations& expectations() const { return expectations_; }

  ReconcileCounters counters() const;

 private:
  struct JobMemory {
    absl::Time last_ps_disruption = absl::InfinitePast();
    std::string last_invalid_message;
    nlohmann::json pod_group;  // BuildPodGroup's object as last created or confirmed
    std::string last_pod_group_problem;
    std::string last_checkpoint_volume_problem;
    std::string last_checkpoint_storage_problem;
    bool network_policy_confirmed = false;  // this process made or found the job's policy
    // The token and control certificate of a Secret whose create was dispatched and the cache does
    // not show yet.
    std::string token;
    std::shared_ptr<const CoordinatorTls> tls;
    // The last create the API server refused (Created False, FailedCreate), until one succeeds.
    std::string create_failure;
    // A first status write in flight: the resourceVersion it produced (once answered) and the
    // ones the job informer showed meanwhile.
    bool status_in_flight = false;
    std::string awaited_status_version;
    std::set<std::string> seen_versions;
  };

  // Writes a reconcile hands to the executor: their expectations recorded first, one Event for
  // what was created, failures as a Warning Event, Created False and a requeue with backoff.
  struct Write {
    // The expectation: "pods/<name>", "services/<name>", "secrets/<name>", "status".
    std::string object;
    std::string kind;  // "pod", "service", "secret", "status"
    std::function<absl::StatusOr<nlohmann::json>()> call;
    // Pods and the Secret they mount go before Services and status writes of every job.
    bool urgent = false;
  };
  struct WriteBatch;
  void Dispatch(const std::string& key, const nlohmann::json& job_json, std::vector<Write> writes,
                absl::Time now);
  void Finished(WriteBatch& batch, size_t index, const absl::StatusOr<nlohmann::json>& result);
  void BatchDone(WriteBatch& batch);
  // The first status write answered with `version`: observed once the cache holds it.
  void StatusWritten(const std::string& key, const nlohmann::json& job_json,
                     const std::string& version);

  ReconcileResult ReconcileValid(const nlohmann::json& job_json, v1alpha1::TrainingJob job,
                                 absl::Time now);
  ReconcileResult ReconcileInvalid(const nlohmann::json& job_json, const std::string& key,
                                   const std::string& message, absl::Time now);
  ReconcileResult ReconcileFinished(const nlohmann::json& job_json,
                                    const v1alpha1::TrainingJob& job,
                                    const std::vector<ObservedPod>& pods, absl::Time now);

  struct JobSecret {
    std::string token;  // empty: the job runs open
    nlohmann::json data = nlohmann::json::object();  // base64 values
    std::string resource_version;
  };
  // The job's Secret as the cluster view shows it: nullopt when there is none yet;
  // FailedPrecondition when a Secret of that name is not the job's.
  absl::StatusOr<std::optional<JobSecret>> CachedSecret(const v1alpha1::TrainingJob& job);
  // What the job's Secret lacks (merge-patch data; empty: nothing): the role credentials of an
  // operator before them, the TLS material of one before TLS, a role certificate for replicas
  // the job was scaled up to (job_tls_secret.h).
  static absl::StatusOr<nlohmann::json> SecretUpgrade(const v1alpha1::TrainingJob& job,
                                                      const std::string& token,
                                                      const nlohmann::json& data);
  // CachedSecret, completed with SecretUpgrade's keys by a merge patch when it lacks any
  // (reconciler_secret.cc); what it returns is the Secret as patched.
  absl::StatusOr<std::optional<JobSecret>> UpToDateSecret(const v1alpha1::TrainingJob& job);
  // With a gang scheduler: the job's PodGroup exists, controlled by the job, with the spec
  // BuildPodGroup gives (created, or its fields merge-patched back). Asks the API server only
  // when pods are about to be created or the PodGroup differs from the one last confirmed. A
  // problem no retry fixes (the PodGroup API is not installed, not permitted, the name taken by
  // another object) is OK with *problem set; other failures are errors.
  absl::Status EnsurePodGroup(const nlohmann::json& job_json, const v1alpha1::TrainingJob& job,
                              bool pods_to_create, std::string* problem);
  // With spec.checkpoint.volume and a coordinator or PS pod about to be created (`decision`'s
  // creates and restarts): the claim exists (created from claimTemplate) and can serve
  // (reconciler_checkpoint_volume.cc). Returns why not ("" when it can, or when no such pod is to
  // be created), with a Warning Event the first time each problem is seen; a failure a retry may
  // fix goes to *error.
  std::string EnsureCheckpointVolume(const nlohmann::json& job_json,
                                     const v1alpha1::TrainingJob& job,
                                     const JobDecision& decision, absl::Status* error);
  absl::StatusOr<std::string> CheckpointVolumeProblem(const nlohmann::json& job_json,
                                                      const v1alpha1::TrainingJob& job);
  // With spec.checkpoint.s3 and a coordinator or PS pod about to be created: the credentials
  // Secret has both keys and the bucket exists and accepts them (reconciler_checkpoint_storage.cc).
  // Returns why not, as EnsureCheckpointVolume does.
  std::string EnsureCheckpointStorage(const nlohmann::json& job_json,
                                      const v1alpha1::TrainingJob& job,
                                      const JobDecision& decision, absl::Status* error);
  absl::StatusOr<std::string> CheckpointStorageProblem(const v1alpha1::TrainingJob& job);
  // Remembers `problem` (may be empty) as the job's latest of one kind (`last`); true when it is
  // a problem other than the one remembered, i.e. worth a Warning Event.
  bool NewJobProblem(const v1alpha1::TrainingJob& job, std::string JobMemory::*last,
                     const std::string& problem);
  // The job's own pods (controlled by its UID), observed; pods already restarted are left out.
  absl::StatusOr<std::vector<ObservedPod>> ObservePods(const v1alpha1::TrainingJob& job);
  // Notices for `targets` (default: every pod) to the coordinator found among `pods`. Returns
  // how many disruption signals were new (each pod and signal counts once; a scale-down is not a
  // disruption).
  int SendNotices(const nlohmann::json& job_json, const v1alpha1::TrainingJob& job,
                  const std::vector<ObservedPod>& pods, const std::string& token,
                  const std::shared_ptr<const CoordinatorTls>& control_tls, absl::Time now,
                  const std::vector<ObservedPod>* targets = nullptr);
  // Force-deletes pods stuck Terminating on a lost node; returns when the next one falls due.
  std::optional<absl::Duration> ReplaceStuckPods(const nlohmann::json& job_json,
                                                 const std::vector<ObservedPod>& pods,
                                                 absl::Time now);
  // The Services the job lacks (to create) and deletes those of replicas it no longer has.
  absl::StatusOr<std::vector<Write>> ServiceWrites(
      const std::shared_ptr<const v1alpha1::TrainingJob>& job);
  Write PodWrite(const std::shared_ptr<const JobPods>& pods, ReplicaKey key);
  absl::Status WriteStatus(const nlohmann::json& job_json,
                           const v1alpha1::TrainingJobStatus& status);
  absl::Status DeletePod(const nlohmann::json& job_json, const v1alpha1::TrainingJob& job,
                         const ObservedPod& pod, const std::string& why, int64_t grace_seconds);

  ClusterView& view_;
  kube::KubeClient& client_;
  PreemptionNotifier& notifier_;
  EventSink& events_;
  ReconcilerOptions options_;
  InlineWriteExecutor inline_writes_;
  WriteExecutor& writes_;
  CreationExpectations expectations_;

  mutable StdMutex mu_;
  std::set<std::string> restarted_pods_ ABSL_GUARDED_BY(mu_);   // UIDs
  std::set<std::string> notified_ ABSL_GUARDED_BY(mu_);         // UID + "|" + signal
  std::map<std::string, JobMemory> jobs_ ABSL_GUARDED_BY(mu_);  // by "namespace/name"
  ReconcileCounters counters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tj::op
