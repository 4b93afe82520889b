// The job's checkpoint bucket (spec.checkpoint.s3 with an s3://bucket/prefix dir) as pod
// environment, and its credentials read out of the Secret the job names. Pure, like
// checkpoint_volume.h; checkpoint_storage_probe.h asks the bucket, and the reconciler's step that
// uses both is reconciler_checkpoint_storage.cc.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "api/v1alpha1/types.h"
#include "jobcontrol/job_phase.h"
#include "jobcontrol/replicas.h"
#include "nlohmann/json.hpp"

namespace tj::op {

// Whether the job keeps its checkpoints in a bucket (spec.checkpoint.s3 is set).
bool UsesCheckpointBucket(const v1alpha1::TrainingJob& job);

// Whether `decision` creates (or restarts) a replica that writes checkpoints: the coordinator
// (manifests) or a PS (its shard). Workers never touch the checkpoint directory or bucket, so
// their pods neither wait for the claim or the bucket nor receive the credentials.
bool CreatesCheckpointWriter(const JobDecision& decision);

// "Secret <namespace>/<name>": the job's credentials Secret, as messages name it.
std::string DescribeCredentialsSecret(const v1alpha1::TrainingJob& job);

// For a job with a bucket, on the coordinator's and every PS's trainer container (the first):
// TJ_S3_ENDPOINT, TJ_S3_REGION, TJ_S3_CREDENTIALS_SECRET, and AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY from the Secret by secretKeyRef: the values never enter the pod spec.
// Same-named variables of the template are replaced, as for every variable the operator sets.
// No-op for other jobs and for workers.
void AddCheckpointStorageEnv(const v1alpha1::TrainingJob& job, ReplicaType type,
                             nlohmann::json& pod_spec);

struct S3Credentials {
  std::string access_key_id;
  std::string secret_access_key;
};

// How messages show an access key ID: its last four characters after "****" (as AWS's console
// does), all "****" when it has fewer than eight; never the secret access key.
std::string MaskedAccessKeyId(const std::string& access_key_id);
// `message` with every ID the runtime quotes as "access key <ID>" masked as above: for a
// coordinator's report, whose credentials the operator does not read.
std::string MaskAccessKeyIdsIn(std::string_view message);

// The access key pair out of `secret` (as read from the API server: data values in base64).
// FailedPrecondition, whose message names the Secret, the key and the spec field, when a key is
// missing, empty or not base64.
absl::StatusOr<S3Credentials> CredentialsFromSecret(const v1alpha1::TrainingJob& job,
                                                    const nlohmann::json& secret);

}  // namespace tj::op
