// One signed HTTP request to an S3-compatible endpoint, through libcurl: path-style URLs
// (endpoint/bucket/key, so 127.0.0.1 and in-cluster service names work without DNS per bucket),
// AWS Signature Version 4 computed by libcurl's own signer (CURLOPT_AWS_SIGV4) with an unsigned
// payload. Errors become absl::Status naming the object, the endpoint and, for refused
// credentials, where they came from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "coordinator/checkpoint/s3_location.h"

namespace tj {

enum class HttpMethod { kGet, kHead, kPut, kPost, kDelete };

struct S3Request {
  HttpMethod method = HttpMethod::kGet;
  std::string bucket;
  std::string key;    // empty: the bucket itself
  std::string query;  // canonical: keys sorted, values URI-encoded (S3QueryValue)
  std::string_view body;
  // PUT only, a conditional write (S3 since 2024, SeaweedFS, MinIO): `if_match` sends
  // "If-Match: <etag>" (write only over that version), `if_none_match_any` "If-None-Match: *"
  // (write only where nothing is). A failed condition is Aborted (S3ErrorStatus).
  std::string if_match;
  bool if_none_match_any = false;
  // GET only: bytes [offset, offset + size) land in `out` (a Range request).
  std::optional<uint64_t> range_offset;
  char* out = nullptr;
  size_t out_size = 0;
};

struct S3Response {
  long status = 0;
  std::string body;      // the response body unless it went to S3Request::out
  size_t out_bytes = 0;  // bytes copied to S3Request::out
  std::string etag;
  std::optional<uint64_t> content_length;
};

// URI-encodes a query value or key the way SigV4 canonicalises it (unreserved characters kept;
// '/' kept too when `keep_slash`).
std::string S3UriEncode(std::string_view value, bool keep_slash);

// "s3://bucket/key at <endpoint>".
std::string DescribeS3Object(const S3Options& options, std::string_view bucket,
                             std::string_view key);

// Sends the request. Transport failures are Unavailable naming the endpoint; an HTTP status of 300
// or more becomes a status from the S3 error code in the body (S3ErrorStatus) unless it is in
// `accepted` (404 for a HEAD that may find nothing).
absl::StatusOr<S3Response> PerformS3Request(const S3Options& options, const S3Request& request,
                                            long accepted = 0);

// The absl::Status for an S3 error response: NoSuchBucket FailedPrecondition naming the bucket,
// refused credentials PermissionDenied naming their source, NoSuchKey NotFound, 5xx Unavailable,
// a failed write condition (412 PreconditionFailed, 409 ConditionalRequestConflict) Aborted.
absl::Status S3ErrorStatus(const S3Options& options, const S3Request& request,
                           const S3Response& response);

}  // namespace tj
