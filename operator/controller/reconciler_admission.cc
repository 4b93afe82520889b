#include "operator/controller/reconciler_admission.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "operator/controller/job_status.h"
#include "operator/controller/kueue_requests.h"
#include "operator/controller/replica_objects.h"
#include "spdlog/spdlog.h"

namespace tj::op {
namespace {

using nlohmann::json;

// The reason of the job's Suspended condition while its Workload waits.
constexpr char kWaitingReason[] = "WaitingForAdmission";

}  // namespace

StepResult AdmissionStep::Hold(JobReconcile& job, const std::string& reason,
                               const std::string& message) {
  job.queue_hold = QueueHold{reason, message};
  return StepResult::RequeueAfter(options_.poll_interval);
}

bool AdmissionStep::WorkloadWatched(const JobReconcile& job) {
  return view_.WatchedWorkload(JobNamespace(*job.job), WorkloadName(*job.job)).has_value();
}

StepResult AdmissionStep::AwaitWorkload(JobReconcile& job, const std::string& reason,
                                        const std::string& message) {
  job.queue_hold = QueueHold{reason, message};
  // Watched, Kueue's next change of the Workload (or, evicted, the pods' deletions) brings the
  // job back: no look again. Session 11 kept one every poll_interval because an admitted job
  // twice got no pods; that was a wake-up lost in JobWrites (ObservedByAnswer), not here.
  if (WorkloadWatched(job)) return StepResult::Continue();
  return StepResult::RequeueAfter(options_.poll_interval);
}

void AdmissionStep::EventOnce(const JobReconcile& job, EventType type, const std::string& reason,
                              const std::string& message) {
  const bool fresh = memory_.With(job.key, [&](Memory& m) {
    const std::string key = reason + "|" + message;
    if (m.last_event == key) return false;
    m.last_event = key;
    return true;
  });
  if (fresh) events_.Record(*job.job_json, type, reason, message);
}

absl::StatusOr<std::string> AdmissionStep::QueueProblem(const JobReconcile& job) {
  const std::string queue = QueueNameOf(*job.job);
  const kube::ResourceRef ref = KueueResource("localqueues", JobNamespace(*job.job), queue);
  absl::StatusOr<json> got = client_.Get(ref);
  if (got.ok()) return std::string();
  if (absl::IsNotFound(got.status())) {
    return absl::StrCat("metadata.labels[", kQueueNameLabel, "]: LocalQueue ", DescribeRef(ref),
                        " does not exist (or Kueue is not installed); the job waits, without "
                        "pods, until it does");
  }
  if (absl::IsPermissionDenied(got.status())) {
    return absl::StrCat("the operator may not read LocalQueue ", DescribeRef(ref), " (",
                        got.status().message(),
                        "); its RBAC must grant kueue.x-k8s.io localqueues get (the Helm chart "
                        "does with kueue.enabled=true)");
  }
  return got.status();
}

StepResult AdmissionStep::Run(JobReconcile& job) {
  if (!options_.enabled || QueueNameOf(*job.job).empty()) return StepResult::Continue();
  const v1alpha1::TrainingJob& spec = *job.job;
  const kube::ResourceRef ref = KueueResource("workloads", JobNamespace(spec), WorkloadName(spec));
  const bool prebuilt = UsesPrebuiltWorkload(spec);
  absl::StatusOr<json> workload = GetJobWorkload(view_, client_, spec);
  if (absl::IsNotFound(workload.status()) && prebuilt) {
    // MultiKueue copies the Workload to this cluster before the job: one missing is either not
    // made yet or named wrong; either way this job never makes its own.
    return Hold(job, "PrebuiltWorkloadNotFound",
                absl::StrCat("metadata.labels[", kPrebuiltWorkloadLabel, "]: Workload ",
                             DescribeRef(ref),
                             " does not exist; the job waits, without pods, until it does"));
  }
  if (absl::IsNotFound(workload.status())) return Create(job);
  if (absl::IsPermissionDenied(workload.status())) {
    return Hold(job, "KueueUnavailable",
                absl::StrCat("the operator may not read Workload ", DescribeRef(ref), " (",
                             workload.status().message(),
                             "); its RBAC must grant kueue.x-k8s.io workloads (the Helm chart "
                             "does with kueue.enabled=true)"));
  }
  if (!workload.ok()) return StepResult::Fail(workload.status());
  if (!ControlledBy(*workload, spec.metadata.uid.value_or(""))) {
    if (!prebuilt || HasController(*workload)) {
      return Hold(job, "WorkloadConflict",
                  absl::StrCat("Workload ", DescribeRef(ref),
                               " exists and is not controlled by this TrainingJob; delete it or ",
                               prebuilt ? "label the job with another" : "rename the job"));
    }
    // A prebuilt Workload nothing controls yet: the job adopts it, as Kueue's integrations do,
    // so that it goes with the job and the watch maps its changes to the job.
    workload = client_.MergePatch(ref, AdoptionPatch(*workload, spec));
    if (!workload.ok()) return StepResult::Fail(workload.status());
  }
  if (prebuilt) {
    if (std::string mismatch = PodSetMismatch(*workload, spec); !mismatch.empty()) {
      const std::string message =
          absl::StrCat("the prebuilt Workload ", DescribeRef(ref), " is not this job's: ",
                       mismatch, "; the job waits, without pods");
      EventOnce(job, EventType::kWarning, "PrebuiltWorkloadOutOfSync", message);
      return Hold(job, "PrebuiltWorkloadOutOfSync", message);
    }
  }
  if (absl::Status active = SyncActive(client_, *workload, spec); !active.ok()) {
    return StepResult::Fail(active);
  }
  const WorkloadReading read = ReadWorkload(*workload);
  switch (read.state) {
    case WorkloadState::kFinished:
      return StepResult::Continue();
    case WorkloadState::kEvicted:
      return Evicted(job, *workload, read);
    case WorkloadState::kAdmitted: {
      memory_.With(job.key, [](Memory& m) {
        m.eviction_seen.reset();
        m.eviction_counted = false;
      });
      absl::StatusOr<std::shared_ptr<const Placements>> placements = PlacementsFor(job, read);
      if (!placements.ok()) return StepResult::Fail(placements.status());
      job.placements = *std::move(placements);
      EventOnce(job, EventType::kNormal, "Admitted",
                absl::StrCat("Kueue admitted Workload ", DescribeRef(ref)));
      // Not watched, an eviction is seen by looking again.
      if (WorkloadWatched(job)) return StepResult::Continue();
      return StepResult::RequeueAfter(options_.poll_interval);
    }
    case WorkloadState::kPending:
      break;
  }
  absl::StatusOr<std::string> problem = QueueProblem(job);
  if (!problem.ok()) return StepResult::Fail(problem.status());
  if (!problem->empty()) {
    EventOnce(job, EventType::kWarning, "LocalQueueNotFound", *problem);
    return Hold(job, "LocalQueueNotFound", *problem);
  }
  return AwaitWorkload(job, kWaitingReason,
              absl::StrCat("Workload ", DescribeRef(ref), " waits for admission in LocalQueue ",
                           QueueNameOf(spec), read.message.empty() ? "" : ": ", read.message));
}

StepResult AdmissionStep::Create(JobReconcile& job) {
  const v1alpha1::TrainingJob& spec = *job.job;
  absl::StatusOr<std::string> problem = QueueProblem(job);
  if (!problem.ok()) return StepResult::Fail(problem.status());
  if (!problem->empty()) {
    EventOnce(job, EventType::kWarning, "LocalQueueNotFound", *problem);
    return Hold(job, "LocalQueueNotFound", *problem);
  }
  absl::StatusOr<std::optional<int32_t>> priority = WorkloadPriority(client_, spec);
  if (absl::IsNotFound(priority.status())) {
    const std::string message(priority.status().message());
    EventOnce(job, EventType::kWarning, "PriorityClassNotFound", message);
    return Hold(job, "PriorityClassNotFound", message);
  }
  if (!priority.ok()) return StepResult::Fail(priority.status());
  const json workload = BuildWorkload(spec, *priority);
  const kube::ResourceRef collection = KueueResource("workloads", JobNamespace(spec));
  absl::StatusOr<json> created = client_.Create(collection, workload);
  if (!created.ok() && !absl::IsAlreadyExists(created.status())) {
    return StepResult::Fail(created.status());
  }
  const std::string name = absl::StrCat(JobNamespace(spec), "/", WorkloadName(spec));
  if (created.ok()) {
    events_.Record(*job.job_json, EventType::kNormal, "CreatedWorkload",
                   absl::StrCat("created Workload ", name, " in LocalQueue ", QueueNameOf(spec)));
  }
  // Watched, its creation's event brings the job back.
  return AwaitWorkload(
      job, kWaitingReason,
      absl::StrCat("Workload ", name, " waits for admission in LocalQueue ", QueueNameOf(spec)));
}

StepResult AdmissionStep::Evicted(JobReconcile& job, const json& workload,
                                  const WorkloadReading& read) {
  const absl::Time seen = memory_.With(job.key, [&](Memory& m) {
    if (!m.eviction_seen) m.eviction_seen = job.now;
    return *m.eviction_seen;
  });
  const std::string why = absl::StrCat("Kueue evicted the job's Workload (", read.reason,
                                       read.message.empty() ? "" : ": ", read.message, ")");
  const ObservedPod* coordinator = RunningCoordinator(job.pods);
  if (coordinator != nullptr && job.now - seen < options_.drain_timeout) {
    // Nothing else changes while the coordinator checkpoints at its next step boundary and
    // exits; its exit is not a failure of the job.
    notices_.NotifyEviction(job, *coordinator, absl::StrCat("KueueEviction/", read.reason));
    EventOnce(job, EventType::kNormal, "Evicted",
              why + "; the coordinator checkpoints before the pods are removed");
    return StepResult::Stop(std::min(options_.poll_interval, absl::Seconds(1)));
  }
  // One preemption in status.preemptions, whatever the pods do meanwhile: counted here, in the
  // first reconcile of the eviction that goes on to write the status (the notice's stops above
  // do not), and the pods this hold deletes are not counted (NoticesStep::DeletingPod).
  if (!memory_.With(job.key, [](Memory& m) { return std::exchange(m.eviction_counted, true); })) {
    ++job.new_preemptions;
  }
  // The pods' deletions bring the job back (the pod watch).
  const bool pods_left = !job.pods.empty();
  if (pods_left) return AwaitWorkload(job, "Evicted", why + "; removing the job's pods");
  // Every pod is gone: the quota goes back, as Kueue's job integrations hand it back.
  json object = workload;
  object["status"] = ReleasedWorkloadStatus(workload, read, job.now);
  const kube::ResourceRef ref =
      KueueResource("workloads", JobNamespace(*job.job), WorkloadName(*job.job));
  absl::StatusOr<json> updated = client_.UpdateStatus(ref, object);
  if (!updated.ok()) return StepResult::Fail(updated.status());
  // eviction_counted stays set until the job is seen admitted again: a reconcile that reads the
  // Workload before this release reached the watch must not count the eviction twice.
  memory_.With(job.key, [](Memory& m) { m.eviction_seen.reset(); });
  EventOnce(job, EventType::kNormal, "QuotaReleased",
            why + "; its pods are gone and the quota is released; waiting for readmission");
  return AwaitWorkload(job, kWaitingReason, why + "; waiting for readmission");
}

absl::StatusOr<std::shared_ptr<const Placements>> AdmissionStep::PlacementsFor(
    const JobReconcile& job, const WorkloadReading& read) {
  std::shared_ptr<const Placements> cached = memory_.With(
      job.key, [&](Memory& m) { return m.flavors == read.flavors ? m.placements : nullptr; });
  if (cached != nullptr) return cached;
  auto placements = std::make_shared<Placements>();
  std::map<std::string, json> flavors;
  for (const auto& [type, names] : read.flavors) {
    Placement& placement = (*placements)[type];
    for (const std::string& name : names) {
      if (!flavors.contains(name)) {
        absl::StatusOr<json> flavor = client_.Get(KueueResource("resourceflavors", "", name));
        if (!flavor.ok()) return flavor.status();
        flavors[name] = *std::move(flavor);
      }
      AddFlavor(flavors[name], placement);
    }
  }
  std::shared_ptr<const Placements> out = std::move(placements);
  memory_.With(job.key, [&](Memory& m) {
    m.flavors = read.flavors;
    m.placements = out;
  });
  return out;
}

StepResult WorkloadFinishedStep::Run(JobReconcile& job) {
  if (!options_.enabled || QueueNameOf(*job.job).empty() || !JobFinished(job.status)) {
    return StepResult::Continue();
  }
  if (marked_.Get(job.key).done) return StepResult::Continue();
  const kube::ResourceRef ref =
      KueueResource("workloads", JobNamespace(*job.job), WorkloadName(*job.job));
  absl::StatusOr<json> workload = GetJobWorkload(view_, client_, *job.job);
  if (absl::IsNotFound(workload.status())) {
    marked_.With(job.key, [](Marked& m) { m.done = true; });
    return StepResult::Continue();
  }
  if (!workload.ok()) return StepResult::Fail(workload.status());
  if (ReadWorkload(*workload).state != WorkloadState::kFinished) {
    bool succeeded = false;
    for (const v1alpha1::JobCondition& c : job.status.conditions) {
      succeeded |= c.type == v1alpha1::ConditionType::kSucceeded &&
                   c.status == v1alpha1::ConditionStatus::kTrue;
    }
    json object = *workload;
    object["status"] = FinishedWorkloadStatus(
        *workload, succeeded, succeeded ? "the TrainingJob succeeded" : "the TrainingJob failed",
        job.now);
    absl::StatusOr<json> updated = client_.UpdateStatus(ref, object);
    if (!updated.ok()) return StepResult::Fail(updated.status());
  }
  marked_.With(job.key, [](Marked& m) { m.done = true; });
  return StepResult::Continue();
}

}  // namespace tj::op
