// Asks a job's checkpoint bucket, with the job's own credentials, whether the coordinator and the
// PS will be able to use it: the same check their checkpoint store makes when it starts
// (ObjectStore::CheckAccess, a one-key listing of the checkpoint prefix, never of the whole
// bucket, so credentials scoped to s3://bucket/prefix pass), made by the operator before it
// creates their pods, so a missing bucket or refused credentials hold the job instead of failing
// its pods. The only network call of the operator that is not to the API server or a coordinator.
#pragma once

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "api/v1alpha1/types.h"
#include "operator/controller/checkpoint_storage.h"

namespace tj::op {

// For a job with spec.checkpoint.s3: OK when the bucket of spec.checkpoint.dir exists at the
// endpoint and lets `credentials` list the dir's prefix. Otherwise the client's error, which
// names the bucket and endpoint: FailedPrecondition for a bucket that does not exist,
// PermissionDenied for refused credentials (naming the Secret), Unavailable for an endpoint that
// does not answer within kBucketProbeTimeout, so a silent endpoint holds a reconcile worker no
// longer than that. The credentials are used for this one request and not kept.
inline constexpr absl::Duration kBucketProbeTimeout = absl::Seconds(5);

absl::Status ProbeCheckpointBucket(const v1alpha1::TrainingJob& job,
                                   const S3Credentials& credentials);

}  // namespace tj::op
