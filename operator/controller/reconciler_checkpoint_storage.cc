// The reconciler's checkpoint-bucket step (spec.checkpoint.s3), the counterpart of
// reconciler_checkpoint_volume.cc: before the coordinator or a PS is created, the credentials
// Secret is read by name (one GET; Secrets are never listed or watched) and the bucket is asked
// with those credentials (checkpoint_storage_probe.h). A Secret that does not exist or lacks a
// key, a bucket that does not exist, credentials that are refused or an endpoint that does not
// answer hold the job: no pod is created (no worker either), Created is False with reason
// CheckpointStorageUnavailable naming the Secret, key or bucket, a Warning Event says why once per
// problem, and the job is looked at again after checkpoint_volume_retry_interval. Holding, not
// failing: the Secret or bucket may be made later, and a job with no pod has written nothing.
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "operator/controller/checkpoint_storage.h"
#include "operator/controller/checkpoint_storage_probe.h"
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

}  // namespace

absl::StatusOr<std::string> Reconciler::CheckpointStorageProblem(
    const v1alpha1::TrainingJob& job) {
  if (!UsesCheckpointBucket(job) || !job.spec.checkpoint->s3->credentials_secret) {
    return std::string();
  }
  const std::string what = DescribeCredentialsSecret(job);
  auto ref = kube::Resource("secrets", NamespaceOf(job),
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
  const absl::Status access = ProbeCheckpointBucket(job, *credentials);
  if (access.ok()) return std::string();
  // The condition and the Event are read by whoever may read the job, who may not read Secrets:
  // the client's and the server's errors quote the access key ID, which is shown masked.
  return absl::StrReplaceAll(
      absl::StrCat("checkpoint location ", job.spec.checkpoint->dir, ": ", access.message(),
                   "; no pod is created until the bucket exists and accepts the credentials of ",
                   what),
      {{credentials->access_key_id, MaskedAccessKeyId(credentials->access_key_id)}});
}

std::string Reconciler::EnsureCheckpointStorage(const json& job_json,
                                                const v1alpha1::TrainingJob& job,
                                                const JobDecision& decision, absl::Status* error) {
  // Checked only when a pod that writes checkpoints is about to be made: a running pod keeps the
  // credentials it started with, and an unchanged job costs no request.
  if (!UsesCheckpointBucket(job) || !CreatesCheckpointWriter(decision)) return "";
  absl::StatusOr<std::string> problem = CheckpointStorageProblem(job);
  if (!problem.ok()) {
    *error = problem.status();
    return "";
  }
  if (NewJobProblem(job, &JobMemory::last_checkpoint_storage_problem, *problem)) {
    spdlog::warn("{}/{}: {}", NamespaceOf(job), job.metadata.name, *problem);
    events_.Record(job_json, EventType::kWarning, kCheckpointStorageUnavailableReason, *problem);
  }
  return *std::move(problem);
}

}  // namespace tj::op
