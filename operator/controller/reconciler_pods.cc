#include "operator/controller/reconciler_pods.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/enums.h"
#include "operator/kube/resource.h"

namespace tj::op {

absl::Status DeleteJobPod(kube::KubeClient& client, EventSink& events, ReconcileCounting& counting,
                          const JobReconcile& job, const ObservedPod& pod, const std::string& why) {
  auto ref = kube::Resource("pods", JobNamespace(*job.job), pod.name);
  if (!ref.ok()) return ref.status();
  kube::DeleteOptions options;
  options.precondition_uid = pod.uid;
  auto deleted = client.Delete(*ref, options);
  if (!deleted.ok()) return deleted.status();
  counting.PodDeleted();
  events.Record(*job.job_json, EventType::kNormal, "DeletedPod",
                absl::StrCat("deleted pod ", pod.name, ": ", why));
  return absl::OkStatus();
}

StepResult PodsStep::Run(JobReconcile& job) {
  const JobDecision& decision = job.decision;
  absl::Status first_error;
  auto keep = [&](absl::Status s) {
    if (!s.ok() && first_error.ok()) first_error = std::move(s);
  };
  const bool finished =
      decision.phase == JobPhase::kSucceeded || decision.phase == JobPhase::kFailed;
  for (ReplicaKey stop : decision.to_stop) {
    const ObservedPod* pod = FindPod(job.pods, stop);
    if (pod == nullptr || pod->deletion_deadline) continue;
    if (!finished && stop.type == ReplicaType::kWorker && pod->phase == ReplicaPhase::kRunning) {
      notices_.NotifyScaleDown(job, *pod);
    }
    notices_.DeletingPod(pod->uid);
    keep(DeleteJobPod(
        client_, events_, counting_, job, *pod,
        finished ? absl::StrCat("the job ended (", decision.reason, ")") : decision.message));
  }
  for (const auto& [replica, restart] : decision.restarts) {
    const ObservedPod* pod = FindPod(job.pods, replica);
    if (pod == nullptr) continue;
    absl::Status deleted = DeleteJobPod(client_, events_, counting_, job, *pod, restart.message);
    if (!deleted.ok() && !absl::IsNotFound(deleted)) {
      keep(deleted);
      continue;
    }
    restarted_.Add(pod->uid);
    counting_.Restarted(restart.reason);
    if (options_.metrics != nullptr) {
      options_.metrics->AddCounter(
          "tj_operator_restarts_total", "Replica restarts carried out, by reason", 1,
          {{"reason", restart.reason},
           {"replica_type", std::string(v1alpha1::ReplicaTypeName(replica.type))}});
    }
    events_.Record(*job.job_json, EventType::kWarning, "RestartingReplica",
                   absl::StrCat(pod->name, ": ", restart.message));
    // Held (no PodGroup, no claim, its replacement policy): the successor waits for a later
    // reconcile (to_create then).
    if (job.MayCreatePods() && !decision.Held(replica)) {
      job.writes.push_back(PodWrite(job, replica));
    }
  }
  if (job.MayCreatePods()) {
    for (ReplicaKey replica : decision.to_create) job.writes.push_back(PodWrite(job, replica));
  }
  if (!first_error.ok()) return StepResult::FailAfterTheRest(first_error);
  return StepResult::Continue();
}

Write PodsStep::PodWrite(const JobReconcile& job, ReplicaKey key) {
  return {absl::StrCat("pods/", ReplicaName(*job.job, key)), WriteKind::kPod,
          [this, pods = job.job_pods, placements = job.placements,
           key]() -> absl::StatusOr<nlohmann::json> {
            absl::StatusOr<nlohmann::json> pod = BuildReplicaPod(*pods, key, options_.pods);
            if (!pod.ok()) return pod.status();
            if (placements != nullptr) {
              auto placement = placements->find(key.type);
              if (placement != placements->end()) ApplyPlacement(placement->second, *pod);
            }
            auto ref = kube::Resource("pods", JobNamespace(pods->job()));
            if (!ref.ok()) return ref.status();
            return client_.Create(*ref, *pod);
          },
          /*urgent=*/true};
}

}  // namespace tj::op
