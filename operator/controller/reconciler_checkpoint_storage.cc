#include "operator/controller/reconciler_checkpoint_storage.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "operator/controller/checkpoint_storage.h"
#include "operator/controller/job_status.h"
#include "operator/controller/reconcile_hold.h"
#include "operator/kube/resource.h"

namespace tj::op {

using nlohmann::json;

absl::StatusOr<std::string> CheckpointStorageStep::Problem(const JobReconcile& reconcile) {
  const v1alpha1::TrainingJob& job = *reconcile.job;
  if (!job.spec.checkpoint->s3->credentials_secret) return std::string();
  const std::string what = DescribeCredentialsSecret(job);
  auto ref = kube::Resource("secrets", JobNamespace(job),
                            job.spec.checkpoint->s3->credentials_secret->name);
  if (!ref.ok()) return ref.status();
  // Read for this check only: the values live in this scope and the pods get them from the
  // Secret themselves (secretKeyRef).
  absl::StatusOr<json> secret = client_.Get(*ref);
  if (!secret.ok()) {
    if (absl::IsNotFound(secret.status())) {
      return absl::StrCat(what, " (spec.checkpoint.s3.credentialsSecret.name) does not exist; no "
                                "pod is created until it does");
    }
    if (absl::IsPermissionDenied(secret.status())) {
      return absl::StrCat("the operator may not read ", what, " (",
                          std::string(secret.status().message()),
                          "); its RBAC must grant secrets get; no pod is created until it can");
    }
    return secret.status();
  }
  absl::StatusOr<S3Credentials> credentials = CredentialsFromSecret(job, *secret);
  secret->clear();
  if (!credentials.ok()) return std::string(credentials.status().message());
  const absl::Status access = probe_(job, *credentials);
  if (access.ok()) return std::string();
  // The condition and the Event are read by whoever may read the job, who may not read Secrets:
  // the client's and the server's errors quote the access key ID, which is shown masked.
  return absl::StrReplaceAll(
      absl::StrCat("checkpoint location ", job.spec.checkpoint->dir, ": ", access.message(),
                   "; no pod is created until the bucket exists and accepts the credentials of ",
                   what),
      {{credentials->access_key_id, MaskedAccessKeyId(credentials->access_key_id)}});
}

StepResult CheckpointStorageStep::Run(JobReconcile& job) {
  // Checked only when a pod that writes checkpoints is about to be made: a running pod keeps the
  // credentials it started with, and an unchanged job costs no request.
  if (!UsesCheckpointBucket(*job.job) || !CreatesCheckpointWriter(job.decision)) {
    return StepResult::Continue();
  }
  absl::StatusOr<std::string> problem = Problem(job);
  if (!problem.ok()) return StepResult::Fail(problem.status());
  job.checkpoint_storage_problem = *std::move(problem);
  return WarnOnceAndHold(last_problem_, job, events_, kCheckpointStorageUnavailableReason,
                         job.checkpoint_storage_problem, retry_interval_);
}

}  // namespace tj::op
