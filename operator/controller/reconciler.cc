#include "operator/controller/reconciler.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <future>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1alpha1/defaults.h"
#include "api/v1alpha1/enums.h"
#include "api/v1alpha1/labels.h"
#include "api/v1alpha1/load.h"
#include "api/v1alpha1/status_json.h"
#include "coordinator/base/job_token.h"
#include "jobcontrol/restart_decision.h"
#include "jobcontrol/tf_config.h"
#include "operator/controller/network_policy.h"
#include "operator/controller/job_tls_secret.h"
#include "operator/controller/pod_group.h"
#include "operator/kube/api_error.h"
#include "operator/kube/resource.h"
#include "spdlog/spdlog.h"
#include "coordinator/base/std_mutex.h"

namespace tj::op {
namespace {

using nlohmann::json;
using v1alpha1::ConditionStatus;
using v1alpha1::ConditionType;

std::string NamespaceOf(const v1alpha1::TrainingJob& job) {
  return job.metadata.namespace_name.empty() ? std::string("default") : job.metadata.namespace_name;
}

std::string JobKey(const v1alpha1::TrainingJob& job) {
  return absl::StrCat(NamespaceOf(job), "/", job.metadata.name);
}

std::string ObjectName(const json& object) {
  if (!object.contains("metadata") || !object["metadata"].is_object()) return "";
  return object["metadata"].value("name", "");
}

// The last True condition: the job's state as `kubectl get tj` shows it.
std::optional<ConditionType> CurrentState(const v1alpha1::TrainingJobStatus& status) {
  std::optional<ConditionType> state;
  for (const v1alpha1::JobCondition& c : status.conditions) {
    if (c.status == ConditionStatus::kTrue) state = c.type;
  }
  return state;
}

const ObservedPod* FindPod(const std::vector<ObservedPod>& pods, ReplicaKey key) {
  for (const ObservedPod& pod : pods) {
    if (pod.key == key) return &pod;
  }
  return nullptr;
}

// The running coordinator with an IP, or null.
const ObservedPod* RunningCoordinator(const std::vector<ObservedPod>& pods) {
  for (const ObservedPod& pod : pods) {
    if (pod.key.type == ReplicaType::kCoordinator && pod.phase == ReplicaPhase::kRunning &&
        !pod.pod_ip.empty()) {
      return &pod;
    }
  }
  return nullptr;
}

// "podIP:2222" of the running coordinator, or "".
std::string CoordinatorAddress(const ObservedPod* coordinator) {
  return coordinator == nullptr ? ""
                                : absl::StrCat(coordinator->pod_ip, ":", v1alpha1::kTrainerPort);
}

// How the operator calls this coordinator: TLS with the job's control certificate when the pod
// serves TLS, plaintext for a pod of an operator before TLS (null).
std::shared_ptr<const CoordinatorTls> TlsFor(const std::string& job_key,
                                             const ObservedPod* coordinator,
                                             const std::shared_ptr<const CoordinatorTls>& tls) {
  if (coordinator == nullptr || !coordinator->tls) return nullptr;
  if (tls == nullptr) {
    spdlog::warn("{}: {} serves TLS and the job's Secret has no control certificate", job_key,
                 coordinator->name);
  }
  return tls;
}

absl::Duration GracePeriodOf(const v1alpha1::TrainingJob& job, ReplicaType type) {
  auto it = job.spec.replica_specs.find(type);
  if (it != job.spec.replica_specs.end()) {
    if (auto grace = it->second.pod_template.termination_grace_period_seconds()) {
      return absl::Seconds(*grace);
    }
  }
  return absl::Seconds(30);  // Kubernetes' default terminationGracePeriodSeconds
}

}  // namespace

Reconciler::Reconciler(ClusterView& view, kube::KubeClient& client, PreemptionNotifier& notifier,
                       EventSink& events, ReconcilerOptions options)
    : view_(view),
      client_(client),
      notifier_(notifier),
      events_(events),
      options_(std::move(options)),
      writes_(options_.writes != nullptr ? *options_.writes : inline_writes_),
      expectations_(options_.expectations_ttl) {}

ReconcileCounters Reconciler::counters() const {
  StdMutexLock lock(mu_);
  return counters_;
}

void Reconciler::PodDeleted(const std::string& uid) {
  StdMutexLock lock(mu_);
  restarted_pods_.erase(uid);
  for (auto it = notified_.lower_bound(uid + "|");
       it != notified_.end() && it->starts_with(uid + "|");) {
    it = notified_.erase(it);
  }
}

ReconcileResult Reconciler::Reconcile(const std::string& key) {
  const absl::Time now = options_.clock();
  const size_t slash = key.find('/');
  const std::string ns = slash == std::string::npos ? "default" : key.substr(0, slash);
  const std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  ObjectPtr job_json = view_.Job(ns, name);
  if (job_json == nullptr) {
    StdMutexLock lock(mu_);
    jobs_.erase(key);  // its objects go with it (ownerReferences)
    expectations_.Forget(key);
    if (options_.progress != nullptr) options_.progress->Forget(key);
    return {};
  }
  v1alpha1::CheckedTrainingJob checked = v1alpha1::CheckTrainingJobJson(*job_json);
  if (!checked.ok()) {
    std::vector<std::string> problems;
    for (const v1alpha1::FieldError& error : checked.errors)
      problems.push_back(error.field.empty() ? error.message
                                             : absl::StrCat(error.field, ": ", error.message));
    return ReconcileInvalid(*job_json, key, absl::StrJoin(problems, "; "), now);
  }
  return ReconcileValid(*job_json, std::move(*checked.job), now);
}

ReconcileResult Reconciler::ReconcileInvalid(const json& job_json, const std::string& key,
                                             const std::string& message, absl::Time now) {
  v1alpha1::FieldErrors status_errors;
  v1alpha1::TrainingJobStatus status;
  if (job_json.contains("status")) {
    status = v1alpha1::DecodeTrainingJobStatus(job_json["status"], "status", status_errors);
  }
  if (JobFinished(status)) return {};
  const std::string full = absl::StrCat("invalid spec: ", message);
  bool first_report = false;
  {
    StdMutexLock lock(mu_);
    JobMemory& memory = jobs_[key];
    first_report = memory.last_invalid_message != full;
    memory.last_invalid_message = full;
  }
  const std::string name = ObjectName(job_json);
  const size_t slash = key.find('/');
  auto pods = view_.PodsOf(key.substr(0, slash), name);
  if (!pods.ok()) return {pods.status(), std::nullopt};
  if (pods->empty()) {
    // Nothing runs yet: the job cannot start. Failed, with every problem in the message.
    SetJobCondition(status.conditions, ConditionType::kFailed, ConditionStatus::kTrue,
                    "InvalidSpec", full, now);
    status.state = "Failed";
    if (!status.completion_time) status.completion_time = now;
    if (job_json.contains("metadata") && job_json["metadata"].contains("generation")) {
      status.observed_generation = job_json["metadata"]["generation"].get<int64_t>();
    }
    if (absl::Status written = WriteStatus(job_json, status); !written.ok()) {
      return {written, std::nullopt};
    }
    if (first_report) events_.Record(job_json, EventType::kWarning, "InvalidSpec", full);
    return {};
  }
  // A running job whose spec was edited into something invalid keeps its pods (weeks of training
  // are not thrown away for a typo) but nothing is created, restarted or deleted until it is
  // fixed; the Warning event says why.
  if (first_report) {
    events_.Record(job_json, EventType::kWarning, "InvalidSpec",
                   absl::StrCat(full,
                                "; the running pods are kept, nothing else is done until "
                                "the spec is fixed"));
  }
  return {};
}

absl::StatusOr<std::vector<ObservedPod>> Reconciler::ObservePods(const v1alpha1::TrainingJob& job) {
  auto objects = view_.PodsOf(NamespaceOf(job), job.metadata.name);
  if (!objects.ok()) return objects.status();
  std::vector<ObservedPod> pods;
  StdMutexLock lock(mu_);
  for (const ObjectPtr& object : *objects) {
    if (!ControlledBy(*object, job.metadata.uid.value_or(""))) continue;
    absl::StatusOr<ObservedPod> pod = ObservePod(*object);
    if (!pod.ok()) {
      spdlog::warn("{}: ignoring pod: {}", JobKey(job), std::string(pod.status().message()));
      continue;
    }
    if (restarted_pods_.contains(pod->uid)) continue;  // already handled; its deletion is coming
    pods.push_back(std::move(*pod));
  }
  return pods;
}

ReconcileResult Reconciler::ReconcileValid(const json& job_json, v1alpha1::TrainingJob job,
                                           absl::Time now) {
  const std::string key = JobKey(job);
  // Before the cache is read: an expectation observed after this point is in the cache already
  // (the informers update their cache before they report).
  const bool creations_settled = expectations_.Satisfied(key, now);
  const v1alpha1::TrainingJobStatus status = job.status.value_or(v1alpha1::TrainingJobStatus{});
  absl::StatusOr<std::vector<ObservedPod>> observed = ObservePods(job);
  if (!observed.ok()) return {observed.status(), std::nullopt};
  std::vector<ObservedPod>& pods = *observed;
  std::string create_failure;
  std::string token;
  std::shared_ptr<const CoordinatorTls> control_tls;
  {
    StdMutexLock lock(mu_);
    JobMemory& memory = jobs_[key];
    memory.last_invalid_message.clear();
    create_failure = memory.create_failure;
    token = memory.token;
    control_tls = memory.tls;
  }
  // Whether the Secret holds the job's CA, so that pods made now can be given TLS.
  bool secret_has_tls = control_tls != nullptr;

  if (JobFinished(status)) return ReconcileFinished(job_json, job, pods, now);

  // Completed first when an older operator or a scale-up left it short (reconciler_secret.cc).
  absl::StatusOr<std::optional<JobSecret>> cached = UpToDateSecret(job);
  if (!cached.ok()) return {cached.status(), std::nullopt};
  if (cached->has_value()) {
    token = (*cached)->token;
    secret_has_tls = !token.empty() && HasJobTls((*cached)->data);
    control_tls = secret_has_tls ? ControlTlsFromSecret(job, (*cached)->data) : nullptr;
  }

  if (!creations_settled) {
    // Creates of this job are in flight: the cache may not show them yet, so nothing is decided
    // from it (a missing pod may be one being created). Their informer events (or answers)
    // bring the job back; the expiry is the safety net for a lost event.
    SendNotices(job_json, job, pods, token, control_tls, now);
    std::optional<absl::Time> expires = expectations_.ExpiresAt(key);
    if (!expires) return {};  // observed meanwhile: its event requeued the job
    return {absl::OkStatus(), std::max(*expires - now, absl::Seconds(1))};
  }

  if (options_.network_policy.enabled) {
    bool confirmed = false;
    {
      StdMutexLock lock(mu_);
      confirmed = jobs_[key].network_policy_confirmed;
    }
    if (!confirmed) {
      // Before anything is requested: the job's pods never run without it.
      if (absl::Status s = EnsureJobNetworkPolicy(client_, job, options_.network_policy);
          !s.ok()) {
        return {s, std::nullopt};
      }
      StdMutexLock lock(mu_);
      jobs_[key].network_policy_confirmed = true;
    }
  }

  std::vector<Write> secret_writes;
  if (!cached->has_value()) {
    absl::StatusOr<std::string> fresh = GenerateJobToken();
    if (!fresh.ok()) return {fresh.status(), std::nullopt};
    token = *fresh;
    absl::StatusOr<json> tls_data = NewJobTlsSecretData(job);
    if (!tls_data.ok()) return {tls_data.status(), std::nullopt};
    control_tls = ControlTlsFromSecret(job, *tls_data);
    secret_has_tls = true;
    {
      StdMutexLock lock(mu_);
      jobs_[key].token = token;
      jobs_[key].tls = control_tls;
    }
    const std::string name = v1alpha1::JobTokenSecretName(job.metadata.name);
    auto ref = kube::Resource("secrets", NamespaceOf(job));
    if (!ref.ok()) return {ref.status(), std::nullopt};
    secret_writes.push_back({absl::StrCat("secrets/", name), "secret",
                             [this, ref = *ref, secret = BuildJobTokenSecret(job, token, *tls_data)] {
                               return client_.Create(ref, secret);
                             },
                             /*urgent=*/true});
  }
  // Shared by this reconcile's queued writes, which build their objects when they run: a burst
  // holds thousands of writes queued, and their built objects were most of the memory.
  auto shared_job = std::make_shared<const v1alpha1::TrainingJob>(job);
  absl::StatusOr<std::vector<Write>> service_writes = ServiceWrites(shared_job);
  if (!service_writes.ok()) return {service_writes.status(), std::nullopt};

  const int new_preemptions = SendNotices(job_json, job, pods, token, control_tls, now);
  std::optional<absl::Duration> requeue = ReplaceStuckPods(job_json, pods, now);

  // A PS that was disrupted makes the coordinator's next failure part of the same disruption.
  absl::Time last_ps_disruption;
  {
    StdMutexLock lock(mu_);
    JobMemory& memory = jobs_[key];
    for (const ObservedPod& pod : pods) {
      if (pod.key.type != ReplicaType::kPs) continue;
      // Observation times on the operator's clock: kubelets' timestamps may be skewed.
      if (pod.termination.disrupted || !pod.disruption.empty()) {
        memory.last_ps_disruption = std::max(memory.last_ps_disruption, now);
      }
    }
    last_ps_disruption = memory.last_ps_disruption;
  }

  JobObservation observation;
  for (const ObservedPod& pod : pods) {
    ReplicaObservation r{pod.key, pod.phase, pod.termination};
    if (pod.key.type == ReplicaType::kCoordinator && pod.phase == ReplicaPhase::kTerminated &&
        last_ps_disruption != absl::InfinitePast()) {
      const absl::Duration since = std::max(now - last_ps_disruption, absl::ZeroDuration());
      if (CoordinatorExitFollowsPsDisruption(pod.termination, since))
        r.termination.disrupted = true;
    }
    observation.replicas.push_back(r);
  }
  observation.restarts_so_far = status.restart_count;
  if (status.start_time) observation.active_for = now - *status.start_time;
  const JobDecision decision = DecideJobPhase(job, observation);

  // What the pods to create share (their TF_CONFIGs' cluster), built once for all of them; a job
  // whose TF_CONFIG cannot fit in an environment variable is refused before any pod is made.
  std::shared_ptr<const JobPods> job_pods;
  if (!decision.to_create.empty() || !decision.restarts.empty()) {
    // TLS for new pods once the Secret has the job's certificates, unless a pod of the job serves
    // plaintext (made by an operator before TLS): replicas of one job must speak alike, so such a
    // job runs plaintext until all of its pods are gone.
    const bool tls_pods = secret_has_tls && std::all_of(pods.begin(), pods.end(),
                                                        [](const ObservedPod& p) { return p.tls; });
    absl::StatusOr<std::shared_ptr<const JobPods>> built = JobPods::Create(shared_job, tls_pods);
    if (!built.ok()) {
      return ReconcileInvalid(job_json, key,
                              absl::StrCat("spec.replicaSpecs: ", built.status().message()), now);
    }
    job_pods = *std::move(built);
  }

  // Gang scheduling: the PodGroup before any pod that names it. Without it no pod is created
  // (the scheduler would leave them Pending for ever); Created says why, and the job is looked at
  // again later.
  std::string pod_group_problem;
  if (absl::Status s =
          EnsurePodGroup(job_json, job, !decision.to_create.empty() || !decision.restarts.empty(),
                         &pod_group_problem);
      !s.ok()) {
    return {s, std::nullopt};
  }
  bool new_pod_group_problem = false;
  {
    StdMutexLock lock(mu_);
    std::string& last = jobs_[key].last_pod_group_problem;
    new_pod_group_problem = !pod_group_problem.empty() && last != pod_group_problem;
    last = pod_group_problem;
  }
  if (new_pod_group_problem) {
    spdlog::warn("{}: {}", key, pod_group_problem);
    events_.Record(job_json, EventType::kWarning, kPodGroupUnavailableReason, pod_group_problem);
  }
  absl::Status volume_error;
  const std::string volume_problem =
      EnsureCheckpointVolume(job_json, job, decision, &volume_error);
  if (!volume_error.ok()) return {volume_error, std::nullopt};
  absl::Status storage_error;
  const std::string storage_problem =
      EnsureCheckpointStorage(job_json, job, decision, &storage_error);
  if (!storage_error.ok()) return {storage_error, std::nullopt};
  const bool may_create_pods =
      pod_group_problem.empty() && volume_problem.empty() && storage_problem.empty();

  // A job never reconciled before (no condition yet) writes its status once, after its objects
  // were requested, counting the pods requested as active: the reconcile that then observes
  // them Pending finds nothing to write. The status-before-action rule (a restart is counted
  // before it is carried out) does not concern it, unless it has something to restart (pods of
  // an earlier leader whose first status write never landed): then it is written first.
  const bool first_reconcile = status.conditions.empty() && decision.restarts.empty();
  StatusUpdate update;
  update.pods = &pods;
  update.decision = &decision;
  if (job.metadata.other.contains("generation") &&
      job.metadata.other["generation"].is_number_integer()) {
    update.generation = job.metadata.other["generation"].get<int64_t>();
  }
  update.now = now;
  update.job_name = job.metadata.name;
  update.new_preemptions = new_preemptions;
  update.pod_group_problem = pod_group_problem;
  update.checkpoint_volume_problem = volume_problem;
  update.checkpoint_storage_problem = storage_problem;
  update.create_failure = create_failure;
  if (first_reconcile && may_create_pods) update.requested = decision.to_create;
  if (options_.progress != nullptr) {
    const ObservedPod* coordinator = RunningCoordinator(pods);
    if (coordinator != nullptr) {
      options_.progress->Refresh(key, CoordinatorAddress(coordinator), token,
                                 TlsFor(key, coordinator, control_tls));
    }
    if (std::optional<v1alpha1::TrainingProgress> p = options_.progress->Latest(key)) {
      update.step = p->step;
      update.last_checkpoint_step = p->last_checkpoint_step;
    }
  }
  const v1alpha1::TrainingJobStatus next = NextJobStatus(status, update);
  // The status first: if it cannot be written (a stale cache: Conflict) nothing below happens, and
  // the next reconcile decides again from fresh data; a restart is counted before it is done.
  if (!first_reconcile && !(next == status)) {
    if (absl::Status s = WriteStatus(job_json, next); !s.ok()) return {s, std::nullopt};
  }
  // On a first reconcile the one Event listing the objects created says it (a burst of new jobs
  // posts one Event per job).
  const bool created_event_covers = first_reconcile && decision.phase == JobPhase::kCreated;
  if (CurrentState(next) != CurrentState(status) && !created_event_covers) {
    const bool bad = decision.phase == JobPhase::kFailed || decision.phase == JobPhase::kRestarting;
    events_.Record(job_json, bad ? EventType::kWarning : EventType::kNormal,
                   std::string(JobPhaseName(decision.phase)), decision.message);
  }

  absl::Status first_error;
  auto keep = [&](absl::Status s) {
    if (!s.ok() && first_error.ok()) first_error = std::move(s);
  };
  const bool finished =
      decision.phase == JobPhase::kSucceeded || decision.phase == JobPhase::kFailed;
  for (ReplicaKey stop : decision.to_stop) {
    const ObservedPod* pod = FindPod(pods, stop);
    if (pod == nullptr || pod->deletion_deadline) continue;
    if (!finished && stop.type == ReplicaType::kWorker && pod->phase == ReplicaPhase::kRunning) {
      // A worker removed by a scale-down: the coordinator drains it before it goes.
      ObservedPod notice_pod = *pod;
      notice_pod.disruption = "ScaleDown";
      const std::vector<ObservedPod> targets = {notice_pod};
      SendNotices(job_json, job, pods, token, control_tls, now, &targets);
    }
    keep(DeletePod(
        job_json, job, *pod,
        finished ? absl::StrCat("the job ended (", decision.reason, ")") : decision.message, -1));
  }
  // Pods first: nothing needs the Services before a pod exists (a pod mounts the Secret when it
  // starts on a node, and the kubelet retries until it is there), and the Secret goes first
  // anyway, one write.
  std::vector<Write> writes = std::move(secret_writes);
  for (const auto& [replica, restart] : decision.restarts) {
    const ObservedPod* pod = FindPod(pods, replica);
    if (pod == nullptr) continue;
    absl::Status deleted = DeletePod(job_json, job, *pod, restart.message, -1);
    if (!deleted.ok() && !absl::IsNotFound(deleted)) {
      keep(deleted);
      continue;
    }
    {
      StdMutexLock lock(mu_);
      restarted_pods_.insert(pod->uid);
      ++counters_.restarts_by_reason[restart.reason];
    }
    if (options_.metrics != nullptr) {
      options_.metrics->AddCounter(
          "tj_operator_restarts_total", "Replica restarts carried out, by reason", 1,
          {{"reason", restart.reason},
           {"replica_type", std::string(v1alpha1::ReplicaTypeName(replica.type))}});
    }
    events_.Record(job_json, EventType::kWarning, "RestartingReplica",
                   absl::StrCat(pod->name, ": ", restart.message));
    // Without its PodGroup the successor waits for a later reconcile (to_create then).
    if (may_create_pods) writes.push_back(PodWrite(job_pods, replica));
  }
  if (may_create_pods) {
    for (ReplicaKey replica : decision.to_create) writes.push_back(PodWrite(job_pods, replica));
  }
  for (Write& w : *service_writes) writes.push_back(std::move(w));
  if (first_reconcile) {
    json object = job_json;
    object["status"] = v1alpha1::TrainingJobStatusToJson(next);
    auto ref = kube::Resource("trainingjobs", NamespaceOf(job), job.metadata.name);
    if (!ref.ok()) return {ref.status(), std::nullopt};
    writes.push_back({"status", "status", [this, ref = *ref, object = std::move(object)] {
                        return client_.UpdateStatus(ref, object);
                      }});
  }
  Dispatch(key, job_json, std::move(writes), now);
  // The safety net if the informer event of the last awaited object is lost (the controller
  // does not enqueue a job for each of its objects while it awaits more). Writes done inline
  // and read back live are observed already.
  if (std::optional<absl::Time> expires = expectations_.ExpiresAt(key)) {
    const absl::Duration left = std::max(*expires - now, absl::Seconds(1));
    if (!requeue || left < *requeue) requeue = left;
  }

  if (!first_error.ok()) return {first_error, std::nullopt};

  if (options_.progress != nullptr && decision.phase == JobPhase::kRunning) {
    if (!requeue || options_.progress_interval < *requeue) requeue = options_.progress_interval;
  }
  if (!pod_group_problem.empty() && (!requeue || options_.pod_group_retry_interval < *requeue)) {
    requeue = options_.pod_group_retry_interval;
  }
  if ((!volume_problem.empty() || !storage_problem.empty()) &&
      (!requeue || options_.checkpoint_volume_retry_interval < *requeue)) {
    requeue = options_.checkpoint_volume_retry_interval;
  }
  const std::optional<int64_t> deadline = job.spec.run_policy.active_deadline_seconds;
  if (deadline && next.start_time && !finished) {
    const absl::Duration left = *next.start_time + absl::Seconds(*deadline) - now;
    if (!requeue || left < *requeue) requeue = std::max(left, absl::ZeroDuration());
  }
  return {absl::OkStatus(), requeue};
}
ReconcileResult Reconciler::ReconcileFinished(const json& job_json,
                                              const v1alpha1::TrainingJob& job,
                                              const std::vector<ObservedPod>& pods,
                                              absl::Time now) {
  // cleanPodPolicy, again on every reconcile of a finished job: no PS is left running.
  std::vector<ReplicaObservation> replicas;
  for (const ObservedPod& pod : pods) replicas.push_back({pod.key, pod.phase, pod.termination});
  absl::Status first_error;
  for (ReplicaKey key : ReplicasToClean(
           job.spec.run_policy.clean_pod_policy.value_or(v1alpha1::kDefaultCleanPodPolicy),
           replicas)) {
    const ObservedPod* pod = FindPod(pods, key);
    if (pod == nullptr || pod->deletion_deadline) continue;
    absl::Status s = DeletePod(job_json, job, *pod, "the job ended (cleanPodPolicy)", -1);
    if (!s.ok() && first_error.ok()) first_error = s;
  }
  if (!first_error.ok()) return {first_error, std::nullopt};

  const v1alpha1::TrainingJobStatus status = job.status.value_or(v1alpha1::TrainingJobStatus{});
  const std::optional<int32_t> ttl = job.spec.run_policy.ttl_seconds_after_finished;
  if (!ttl || !status.completion_time) return {};
  const absl::Time due = *status.completion_time + absl::Seconds(*ttl);
  if (now < due) return {absl::OkStatus(), due - now};
  auto ref = kube::Resource("trainingjobs", NamespaceOf(job), job.metadata.name);
  if (!ref.ok()) return {ref.status(), std::nullopt};
  kube::DeleteOptions options;
  options.propagation_policy = "Background";
  options.precondition_uid = job.metadata.uid;
  auto deleted = client_.Delete(*ref, options);
  if (!deleted.ok() && !absl::IsNotFound(deleted.status())) return {deleted.status(), std::nullopt};
  spdlog::info("{}: deleted {} s after it finished (ttlSecondsAfterFinished)", JobKey(job), *ttl);
  return {};
}



absl::StatusOr<std::vector<Reconciler::Write>> Reconciler::ServiceWrites(
    const std::shared_ptr<const v1alpha1::TrainingJob>& shared_job) {
  const v1alpha1::TrainingJob& job = *shared_job;
  auto services = view_.ServicesOf(NamespaceOf(job), job.metadata.name);
  if (!services.ok()) return services.status();
  std::set<std::string> existing;
  for (const ObjectPtr& service : *services) {
    if (ControlledBy(*service, job.metadata.uid.value_or("")))
      existing.insert(ObjectName(*service));
  }
  auto ref = kube::Resource("services", NamespaceOf(job));
  if (!ref.ok()) return ref.status();
  std::set<std::string> desired;
  std::vector<Write> writes;
  for (const Replica& replica : DesiredReplicas(job)) {
    desired.insert(replica.name);
    if (existing.contains(replica.name)) continue;
    writes.push_back({absl::StrCat("services/", replica.name), "service",
                      [this, ref = *ref, shared_job, key = replica.key] {
                        return client_.Create(ref, BuildReplicaService(*shared_job, key));
                      }});
  }
  // Services of replicas the job no longer has (workers scaled down): rare, done here.
  for (const std::string& name : existing) {
    if (desired.contains(name)) continue;
    auto service_ref = kube::Resource("services", NamespaceOf(job), name);
    if (!service_ref.ok()) return service_ref.status();
    auto deleted = client_.Delete(*service_ref, {});
    if (!deleted.ok() && !absl::IsNotFound(deleted.status())) return deleted.status();
  }
  return writes;
}
absl::Status Reconciler::EnsurePodGroup(const json& job_json, const v1alpha1::TrainingJob& job,
                                        bool pods_to_create, std::string* problem) {
  const GangScheduler scheduler = options_.pods.gang_scheduler;
  if (scheduler == GangScheduler::kNone) return absl::OkStatus();
  const std::string key = JobKey(job);
  const json desired = BuildPodGroup(job, scheduler);
  if (!pods_to_create) {
    StdMutexLock lock(mu_);
    auto it = jobs_.find(key);
    if (it != jobs_.end() && it->second.pod_group == desired) return absl::OkStatus();
  }
  auto confirmed = [&] {
    StdMutexLock lock(mu_);
    jobs_[key].pod_group = desired;
  };
  const std::string ns = NamespaceOf(job);
  const std::string name = PodGroupName(job);
  const std::string api = PodGroupApiName(scheduler);
  const std::string what = absl::StrCat("PodGroup ", ns, "/", name, " (", api, ")");
  const kube::ResourceRef ref = PodGroupResource(scheduler, ns, name);
  auto not_permitted = [&](const absl::Status& status) {
    return absl::StrCat("the operator may not use ", api, " (", std::string(status.message()),
                        "); its RBAC must grant podgroups get, create and patch in API group ",
                        ref.group,
                        " (the Helm chart does with gangScheduler=", GangSchedulerName(scheduler),
                        "); no pod is created until the PodGroup exists");
  };

  absl::StatusOr<json> existing = client_.Get(ref);
  if (existing.ok()) {
    if (!ControlledBy(*existing, job.metadata.uid.value_or(""))) {
      *problem =
          absl::StrCat(what,
                       " exists and is not controlled by this TrainingJob; delete it "
                       "or rename the job; no pod is created until the job's PodGroup exists");
      return absl::OkStatus();
    }
    // The fields the job decides, brought back level-based; others (set by the scheduler or a
    // person) are left alone.
    const json have = existing->contains("spec") ? (*existing)["spec"] : json::object();
    json changed = json::object();
    for (const auto& [field, value] : desired["spec"].items()) {
      const bool same = have.is_object() && have.contains(field) && have[field] == value;
      if (!same) changed[field] = value;
    }
    if (!changed.empty()) {
      auto patched = client_.MergePatch(ref, {{"spec", changed}});
      if (!patched.ok()) return patched.status();
      events_.Record(job_json, EventType::kNormal, "UpdatedPodGroup",
                     absl::StrCat("updated ", what, ": ", changed.dump()));
    }
    confirmed();
    return absl::OkStatus();
  }
  if (absl::IsPermissionDenied(existing.status())) {
    *problem = not_permitted(existing.status());
    return absl::OkStatus();
  }
  // NotFound: no such PodGroup, or no such API; creating tells which.
  if (!absl::IsNotFound(existing.status())) return existing.status();
  absl::StatusOr<json> created = client_.Create(PodGroupResource(scheduler, ns), desired);
  if (created.ok()) {
    confirmed();
    events_.Record(job_json, EventType::kNormal, "CreatedPodGroup",
                   absl::StrCat("created ", what, " with minMember ",
                                desired["spec"]["minMember"].get<int32_t>()));
    return absl::OkStatus();
  }
  // Created by an earlier reconcile whose answer was lost: the next one confirms it.
  if (absl::IsAlreadyExists(created.status())) return absl::OkStatus();
  if (absl::IsNotFound(created.status())) {
    // A POST to a collection is NotFound only when the API server does not serve it (the job's
    // namespace exists: the job is in it).
    *problem = absl::StrCat(
        api, " is not installed: the API server does not serve ", PodGroupApiVersion(scheduler),
        " podgroups; is --gang-scheduler=", GangSchedulerName(scheduler),
        " right? Install that scheduler's CRDs, or run the operator with the gang scheduler the "
        "cluster has (or none); no pod is created until the PodGroup exists");
    return absl::OkStatus();
  }
  if (absl::IsPermissionDenied(created.status())) {
    *problem = not_permitted(created.status());
    return absl::OkStatus();
  }
  return created.status();
}

int Reconciler::SendNotices(const json& job_json, const v1alpha1::TrainingJob& job,
                            const std::vector<ObservedPod>& pods, const std::string& token,
                            const std::shared_ptr<const CoordinatorTls>& control_tls,
                            absl::Time now, const std::vector<ObservedPod>* targets) {
  int new_signals = 0;
  const ObservedPod* coordinator = RunningCoordinator(pods);
  const std::string coordinator_address = CoordinatorAddress(coordinator);
  for (const ObservedPod& pod : targets != nullptr ? *targets : pods) {
    std::string signal = pod.disruption == "ScaleDown" ? pod.disruption : "";
    if (signal.empty()) {
      bool node_known = false;
      ObjectPtr node = pod.node_name.empty() ? nullptr : view_.Node(pod.node_name, &node_known);
      signal = PreemptionSignal(pod, node.get(), node_known);
    }
    if (signal.empty()) continue;
    {
      StdMutexLock lock(mu_);
      if (!notified_.insert(pod.uid + "|" + signal).second) continue;
      if (signal != "ScaleDown") ++new_signals;
      if (pod.key.type == ReplicaType::kPs && signal != "ScaleDown") {
        JobMemory& memory = jobs_[JobKey(job)];
        memory.last_ps_disruption = std::max(memory.last_ps_disruption, now);
      }
    }
    if (coordinator_address.empty()) {
      spdlog::info("{}: {} {}: no running coordinator to notify", JobKey(job), pod.name, signal);
      continue;
    }
    PreemptionNotice notice;
    notice.job = JobKey(job);
    notice.coordinator_address = coordinator_address;
    notice.token = token;
    notice.tls = TlsFor(JobKey(job), coordinator, control_tls);
    notice.task_type = std::string(TfTaskType(pod.key.type));
    notice.task_index = pod.key.index;
    notice.reason = signal;
    notice.deadline = pod.deletion_deadline.value_or(now + GracePeriodOf(job, pod.key.type));
    notifier_.Send(notice);
    {
      StdMutexLock lock(mu_);
      ++counters_.notices_queued;
    }
    if (options_.metrics != nullptr) {
      options_.metrics->AddCounter("tj_operator_preemption_signals_total",
                                   "Pod disruptions seen and passed to the coordinator", 1,
                                   {{"signal", signal.substr(0, signal.find('/'))}});
    }
    events_.Record(job_json, EventType::kNormal, "PreemptionNotice",
                   absl::StrCat(pod.name, ": ", signal, "; notice sent to the coordinator"));
  }
  return new_signals;
}

std::optional<absl::Duration> Reconciler::ReplaceStuckPods(const json& job_json,
                                                           const std::vector<ObservedPod>& pods,
                                                           absl::Time now) {
  std::optional<absl::Duration> next;
  for (const ObservedPod& pod : pods) {
    if (!pod.deletion_deadline || pod.node_name.empty()) continue;
    bool node_known = false;
    ObjectPtr node = view_.Node(pod.node_name, &node_known);
    if (!node_known || (node != nullptr && NodeIsReady(*node))) continue;
    const absl::Time due = *pod.deletion_deadline + options_.terminating_pod_timeout;
    if (now < due) {
      if (!next || due - now < *next) next = due - now;
      continue;
    }
    auto ref = kube::Resource("pods", job_json["metadata"].value("namespace", "default"), pod.name);
    if (!ref.ok()) continue;
    kube::DeleteOptions options;
    options.precondition_uid = pod.uid;
    options.grace_period_seconds = 0;
    auto deleted = client_.Delete(*ref, options);
    if (deleted.ok()) {
      events_.Record(job_json, EventType::kWarning, "ForceDeletedPod",
                     absl::StrCat(pod.name, " was stuck Terminating on node ", pod.node_name,
                                  ", which is not ready, for ",
                                  absl::FormatDuration(now - *pod.deletion_deadline),
                                  " past its deadline; deleted without grace"));
    }
  }
  return next;
}

absl::Status Reconciler::WriteStatus(const json& job_json,
                                     const v1alpha1::TrainingJobStatus& status) {
  json object = job_json;
  object["status"] = v1alpha1::TrainingJobStatusToJson(status);
  const json& meta = job_json["metadata"];
  auto ref =
      kube::Resource("trainingjobs", meta.value("namespace", "default"), meta.value("name", ""));
  if (!ref.ok()) return ref.status();
  auto updated = client_.UpdateStatus(*ref, object);
  return updated.ok() ? absl::OkStatus() : updated.status();
}

absl::Status Reconciler::DeletePod(const json& job_json, const v1alpha1::TrainingJob& job,
                                   const ObservedPod& pod, const std::string& why,
                                   int64_t grace_seconds) {
  auto ref = kube::Resource("pods", NamespaceOf(job), pod.name);
  if (!ref.ok()) return ref.status();
  kube::DeleteOptions options;
  options.precondition_uid = pod.uid;
  if (grace_seconds >= 0) options.grace_period_seconds = grace_seconds;
  auto deleted = client_.Delete(*ref, options);
  if (!deleted.ok()) return deleted.status();
  {
    StdMutexLock lock(mu_);
    ++counters_.pods_deleted;
  }
  events_.Record(job_json, EventType::kNormal, "DeletedPod",
                 absl::StrCat("deleted pod ", pod.name, ": ", why));
  return absl::OkStatus();
}

Reconciler::Write Reconciler::PodWrite(const std::shared_ptr<const JobPods>& pods, ReplicaKey key) {
  return {absl::StrCat("pods/", ReplicaName(pods->job(), key)), "pod",
          [this, pods, key]() -> absl::StatusOr<json> {
            absl::StatusOr<json> pod = BuildReplicaPod(*pods, key, options_.pods);
            if (!pod.ok()) return pod.status();
            auto ref = kube::Resource("pods", NamespaceOf(pods->job()));
            if (!ref.ok()) return ref.status();
            return client_.Create(*ref, *pod);
          },
          /*urgent=*/true};
}

}  // namespace tj::op
