#include "coordinator/checkpoint/s3_upload.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/checkpoint/s3_request.h"
#include "coordinator/checkpoint/s3_xml.h"
#include "spdlog/spdlog.h"

namespace tj {

S3Upload::S3Upload(const S3Options& options, std::string bucket, std::string key)
    : options_(options), bucket_(std::move(bucket)), key_(std::move(key)) {}

S3Upload::~S3Upload() {
  if (finished_ || upload_id_.empty()) return;
  S3Request abort{.method = HttpMethod::kDelete,
                  .bucket = bucket_,
                  .key = key_,
                  .query = absl::StrCat("uploadId=", S3UriEncode(upload_id_, false))};
  if (absl::StatusOr<S3Response> response = PerformS3Request(options_, abort); !response.ok()) {
    // The parts stay until the bucket's lifecycle rule removes them; the object never appears.
    spdlog::warn("{}: could not abort the unfinished upload: {}",
                 DescribeS3Object(options_, bucket_, key_),
                 std::string(response.status().message()));
  }
}

absl::Status S3Upload::Fail(absl::Status error) {
  if (error_.ok()) error_ = error;
  return error;
}

absl::Status S3Upload::Append(std::string_view data) {
  TJ_RETURN_IF_ERROR(error_);
  if (finished_) return absl::FailedPreconditionError(absl::StrCat(key_, ": upload finished"));
  bytes_ += data.size();
  while (!data.empty()) {
    const size_t n = std::min(data.size(), options_.part_bytes - part_.size());
    part_.append(data.substr(0, n));
    data.remove_prefix(n);
    if (part_.size() == options_.part_bytes) TJ_RETURN_IF_ERROR(SendPart());
  }
  return absl::OkStatus();
}

absl::Status S3Upload::SendPart() {
  if (upload_id_.empty()) {
    S3Request create{
        .method = HttpMethod::kPost, .bucket = bucket_, .key = key_, .query = "uploads="};
    absl::StatusOr<S3Response> response = PerformS3Request(options_, create);
    if (!response.ok()) return Fail(response.status());
    absl::StatusOr<std::string> id = ParseInitiateMultipartUpload(response->body);
    if (!id.ok()) {
      return Fail(absl::InternalError(
          absl::StrCat(DescribeS3Object(options_, bucket_, key_), ": ", id.status().message())));
    }
    upload_id_ = *std::move(id);
  }
  S3Request put{.method = HttpMethod::kPut,
                .bucket = bucket_,
                .key = key_,
                .query = absl::StrCat("partNumber=", etags_.size() + 1,
                                      "&uploadId=", S3UriEncode(upload_id_, false)),
                .body = part_};
  absl::StatusOr<S3Response> response = PerformS3Request(options_, put);
  if (!response.ok()) return Fail(response.status());
  if (response->etag.empty()) {
    return Fail(
        absl::InternalError(absl::StrCat(DescribeS3Object(options_, bucket_, key_), ": part ",
                                         etags_.size() + 1, " uploaded without an ETag")));
  }
  etags_.push_back(response->etag);
  part_.clear();
  return absl::OkStatus();
}

absl::Status S3Upload::Complete() {
  std::string body = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags_.size(); ++i) {
    absl::StrAppend(&body, "<Part><PartNumber>", i + 1, "</PartNumber><ETag>", etags_[i],
                    "</ETag></Part>");
  }
  absl::StrAppend(&body, "</CompleteMultipartUpload>");
  S3Request complete{.method = HttpMethod::kPost,
                     .bucket = bucket_,
                     .key = key_,
                     .query = absl::StrCat("uploadId=", S3UriEncode(upload_id_, false)),
                     .body = body};
  absl::StatusOr<S3Response> response = PerformS3Request(options_, complete);
  if (!response.ok()) return response.status();
  // S3 may answer 200 and report the failure in the body.
  if (ParseS3Error(response->body).has_value()) {
    return S3ErrorStatus(options_, complete, *response);
  }
  return absl::OkStatus();
}

absl::Status S3Upload::Finish() {
  TJ_RETURN_IF_ERROR(error_);
  if (finished_) return absl::FailedPreconditionError(absl::StrCat(key_, ": upload finished"));
  if (upload_id_.empty()) {
    S3Request put{.method = HttpMethod::kPut, .bucket = bucket_, .key = key_, .body = part_};
    if (absl::StatusOr<S3Response> response = PerformS3Request(options_, put); !response.ok()) {
      return Fail(response.status());
    }
  } else {
    if (!part_.empty()) TJ_RETURN_IF_ERROR(SendPart());
    if (absl::Status status = Complete(); !status.ok()) return Fail(status);
  }
  finished_ = true;
  part_.clear();
  part_.shrink_to_fit();
  return absl::OkStatus();
}

}  // namespace tj
