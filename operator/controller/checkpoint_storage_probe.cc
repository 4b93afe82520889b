#include "operator/controller/checkpoint_storage_probe.h"

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/checkpoint_s3.h"
#include "coordinator/checkpoint/s3_location.h"
#include "coordinator/checkpoint/s3_object_store.h"

namespace tj::op {

absl::Status ProbeCheckpointBucket(const v1alpha1::TrainingJob& job,
                                   const S3Credentials& credentials) {
  if (!UsesCheckpointBucket(job)) return absl::OkStatus();
  const v1alpha1::CheckpointS3& s3 = *job.spec.checkpoint->s3;
  absl::StatusOr<S3Location> location = ParseS3Location(job.spec.checkpoint->dir);
  if (!location.ok()) return location.status();
  S3Options options;
  options.endpoint = s3.endpoint;
  while (options.endpoint.ends_with('/')) options.endpoint.pop_back();
  options.region = s3.region.value_or(v1alpha1::kDefaultS3Region);
  options.access_key = credentials.access_key_id;
  options.secret_key = credentials.secret_access_key;
  options.credentials_source = DescribeCredentialsSecret(job);
  options.request_timeout = kBucketProbeTimeout;
  S3ObjectStore store(std::move(options), location->bucket, location->prefix);
  return store.CheckAccess();
}

}  // namespace tj::op
