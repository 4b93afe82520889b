// The reconciler's checkpoint-volume step: before the coordinator or a PS is created, the claim
// the job mounts exists (made from claimTemplate when the job has one) and can serve. A claim that
// cannot (missing, not ReadWriteMany, being deleted, Lost) holds the job: no pod is created (no
// worker either, it waits with the rest), Created is False naming the claim, a Warning Event says
// why once per problem, and the job is looked at again after checkpoint_volume_retry_interval
// (nothing watches claims). Holding, not failing: the claim may be created or fixed later, and a
// job that never started has written no checkpoint.
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/labels.h"
#include "operator/controller/checkpoint_storage.h"
#include "operator/controller/checkpoint_volume.h"
#include "operator/controller/job_status.h"
#include "operator/controller/reconciler.h"
#include "operator/kube/resource.h"
#include "spdlog/spdlog.h"

namespace tj::op {
namespace {

using nlohmann::json;

std::string NamespaceOf(const v1alpha1::TrainingJob& job) {
  return job.metadata.namespace_name.empty() ? std::string("default") : job.metadata.namespace_name;
}

std::string LabelOf(const json& object, const std::string& label) {
  if (!object.contains("metadata") || !object["metadata"].is_object()) return "";
  const json& meta = object["metadata"];
  if (!meta.contains("labels") || !meta["labels"].is_object()) return "";
  return meta["labels"].value(label, "");
}

}  // namespace

absl::StatusOr<std::string> Reconciler::CheckpointVolumeProblem(
    const json& job_json, const v1alpha1::TrainingJob& job) {
  const std::optional<std::string> name = CheckpointClaimName(job);
  if (!name) return std::string();
  const std::string ns = NamespaceOf(job);
  const std::string what = absl::StrCat("PersistentVolumeClaim ", ns, "/", *name);
  const bool from_template = !job.spec.checkpoint->volume->claim_name.has_value();
  auto ref = kube::Resource("persistentvolumeclaims", ns, *name);
  if (!ref.ok()) return ref.status();

  absl::StatusOr<json> claim = client_.Get(*ref);
  if (!claim.ok() && absl::IsNotFound(claim.status()) && from_template) {
    auto collection = kube::Resource("persistentvolumeclaims", ns);
    if (!collection.ok()) return collection.status();
    claim = client_.Create(*collection, BuildCheckpointClaim(job));
    if (claim.ok()) {
      events_.Record(job_json, EventType::kNormal, "CreatedCheckpointClaim",
                     absl::StrCat("created ", what, " (reclaimPolicy ",
                                  std::string(v1alpha1::ClaimReclaimPolicyName(
                                      job.spec.checkpoint->volume->reclaim_policy.value_or(
                                          v1alpha1::kDefaultClaimReclaimPolicy))),
                                  ")"));
    } else if (absl::IsAlreadyExists(claim.status())) {
      claim = client_.Get(*ref);  // made by an earlier reconcile whose answer was lost
    }
  }
  if (!claim.ok()) {
    if (absl::IsNotFound(claim.status())) {
      return absl::StrCat(what, " (spec.checkpoint.volume.claimName) does not exist; no pod "
                                "is created until it does");
    }
    if (absl::IsPermissionDenied(claim.status())) {
      return absl::StrCat("the operator may not read or create ", what, " (",
                          std::string(claim.status().message()),
                          "); its RBAC must grant persistentvolumeclaims get and create; no pod "
                          "is created until it can");
    }
    return claim.status();
  }
  // A template's claim of another job (or made by hand) is not taken over: its checkpoints are
  // not this job's. A retained claim of an earlier job of the same name is: that is how a job
  // deleted and created again resumes from its checkpoints.
  if (from_template && LabelOf(*claim, v1alpha1::kJobNameLabel) != job.metadata.name) {
    return absl::StrCat(what, " exists and was not made for this TrainingJob (no label ",
                        v1alpha1::kJobNameLabel, "=", job.metadata.name,
                        "); delete it, or name it in spec.checkpoint.volume.claimName to use it; "
                        "no pod is created until then");
  }
  return CheckpointClaimProblem(*claim);
}

std::string Reconciler::EnsureCheckpointVolume(const json& job_json,
                                               const v1alpha1::TrainingJob& job,
                                               const JobDecision& decision, absl::Status* error) {
  // Checked only when a pod that mounts the claim is about to be made: a running pod keeps the
  // volume it mounted, an unchanged job costs no request, and workers never mount it.
  if (!CreatesCheckpointWriter(decision)) return "";
  absl::StatusOr<std::string> problem = CheckpointVolumeProblem(job_json, job);
  if (!problem.ok()) {
    *error = problem.status();
    return "";
  }
  if (NewJobProblem(job, &JobMemory::last_checkpoint_volume_problem, *problem)) {
    spdlog::warn("{}/{}: {}", NamespaceOf(job), job.metadata.name, *problem);
    events_.Record(job_json, EventType::kWarning, kCheckpointVolumeUnavailableReason, *problem);
  }
  return *std::move(problem);
}

bool Reconciler::NewJobProblem(const v1alpha1::TrainingJob& job, std::string JobMemory::*last,
                               const std::string& problem) {
  StdMutexLock lock(mu_);
  std::string& remembered = jobs_[absl::StrCat(NamespaceOf(job), "/", job.metadata.name)].*last;
  const bool new_problem = !problem.empty() && remembered != problem;
  remembered = problem;
  return new_problem;
}

}  // namespace tj::op
