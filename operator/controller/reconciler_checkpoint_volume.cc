#include "operator/controller/reconciler_checkpoint_volume.h"

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/labels.h"
#include "operator/controller/checkpoint_storage.h"
#include "operator/controller/checkpoint_volume.h"
#include "operator/controller/job_status.h"
#include "operator/controller/reconcile_hold.h"
#include "operator/kube/resource.h"

namespace tj::op {
namespace {

using nlohmann::json;

std::string LabelOf(const json& object, const std::string& label) {
  if (!object.contains("metadata") || !object["metadata"].is_object()) return "";
  const json& meta = object["metadata"];
  if (!meta.contains("labels") || !meta["labels"].is_object()) return "";
  return meta["labels"].value(label, "");
}

}  // namespace

absl::StatusOr<std::string> CheckpointVolumeStep::Problem(const JobReconcile& reconcile) {
  const v1alpha1::TrainingJob& job = *reconcile.job;
  const std::optional<std::string> name = CheckpointClaimName(job);
  if (!name) return std::string();
  const std::string ns = JobNamespace(job);
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
      events_.Record(*reconcile.job_json, EventType::kNormal, "CreatedCheckpointClaim",
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

StepResult CheckpointVolumeStep::Run(JobReconcile& job) {
  // Checked only when a pod that mounts the claim is about to be made: a running pod keeps the
  // volume it mounted, an unchanged job costs no request, and workers never mount it.
  if (!CreatesCheckpointWriter(job.decision)) return StepResult::Continue();
  absl::StatusOr<std::string> problem = Problem(job);
  if (!problem.ok()) return StepResult::Fail(problem.status());
  job.checkpoint_volume_problem = *std::move(problem);
  return WarnOnceAndHold(last_problem_, job, events_, kCheckpointVolumeUnavailableReason,
                         job.checkpoint_volume_problem, retry_interval_);
}

}  // namespace tj::op
