// spec.checkpoint.s3: how the coordinator and every PS reach an S3-compatible bucket when
// spec.checkpoint.dir is s3://bucket/prefix: the endpoint, the region and the Secret holding the
// access key pair (its values are never part of the TrainingJob: the operator passes them to the
// pods by secretKeyRef). docs/trainingjob-schema.md, "Checkpoints in object storage", has the
// rules; checkpoint_s3_json.h the decoding and validation.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tj::v1alpha1 {

inline constexpr std::string_view kS3DirScheme = "s3://";
// The region SigV4 signs with when the job names none (AWS's and most S3-compatible servers').
inline constexpr char kDefaultS3Region[] = "us-east-1";
// The Secret keys read by default: the names AWS's tools give these values, so
// `kubectl create secret generic ckpt --from-literal=AWS_ACCESS_KEY_ID=...` needs no mapping.
inline constexpr char kDefaultAccessKeyIdKey[] = "AWS_ACCESS_KEY_ID";
inline constexpr char kDefaultSecretAccessKeyKey[] = "AWS_SECRET_ACCESS_KEY";

// The Secret (in the job's namespace) and the keys of its two values.
struct S3CredentialsSecret {
  std::string name;
  std::optional<std::string> access_key_id_key;      // default AWS_ACCESS_KEY_ID
  std::optional<std::string> secret_access_key_key;  // default AWS_SECRET_ACCESS_KEY

  friend bool operator==(const S3CredentialsSecret&, const S3CredentialsSecret&) = default;
};

struct CheckpointS3 {
  std::string endpoint;                // http(s)://host[:port], path-style requests
  std::optional<std::string> region;   // default us-east-1
  std::optional<S3CredentialsSecret> credentials_secret;  // required

  friend bool operator==(const CheckpointS3&, const CheckpointS3&) = default;
};

// Whether spec.checkpoint.dir names a bucket (s3://...) rather than a directory.
inline bool IsS3CheckpointDir(std::string_view dir) { return dir.starts_with(kS3DirScheme); }

}  // namespace tj::v1alpha1
