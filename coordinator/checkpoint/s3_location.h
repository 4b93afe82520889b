// A checkpoint location in an S3-compatible bucket, `s3://bucket/prefix`, and how to reach it: the
// endpoint, region and credentials a process takes from its environment (the operator fills them
// from the Secret a TrainingJob names; tjctl run passes its own environment on).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tj {

inline constexpr std::string_view kS3Scheme = "s3://";
// S3's smallest part but the last is 5 MiB; 16 MiB keeps a shard upload at two buffers of memory.
inline constexpr size_t kMinS3PartBytes = 5 << 20;
inline constexpr size_t kDefaultS3PartBytes = 16 << 20;

struct S3Location {
  std::string bucket;
  std::string prefix;  // no leading or trailing '/'; may be empty

  // prefix + "/" + name (just name without a prefix).
  std::string Key(std::string_view name) const;
  std::string Url() const;  // s3://bucket[/prefix]
};

bool IsS3Location(std::string_view dir);
// InvalidArgument naming `url` for a bucket name S3 would refuse (3-63 of [a-z0-9.-]) or a prefix
// with empty, "." or ".." components.
absl::StatusOr<S3Location> ParseS3Location(std::string_view url);

struct S3Options {
  std::string endpoint;  // http(s)://host:port; path-style addressing (bucket in the path)
  std::string region = "us-east-1";
  std::string access_key;
  std::string secret_key;
  // Named in errors about refused credentials: where they came from ("Secret <name>", "the
  // environment").
  std::string credentials_source = "the environment";
  size_t part_bytes = kDefaultS3PartBytes;
  // A limit on each request's whole time, for callers that must not wait on a slow endpoint (the
  // operator's bucket check runs in a reconcile worker). Zero: none; a request then ends only when
  // it fails to connect within 10 s or moves no byte for 60 s, so that a large part on a slow link
  // is never cut short.
  absl::Duration request_timeout = absl::ZeroDuration();
};

// From TJ_S3_ENDPOINT (required), TJ_S3_REGION, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
// (required; a Secret's keys), TJ_S3_CREDENTIALS_SECRET (the Secret's name, for errors) and
// TJ_S3_PART_BYTES. InvalidArgument naming the variable that is missing or wrong.
absl::StatusOr<S3Options> S3OptionsFromEnv();

}  // namespace tj
