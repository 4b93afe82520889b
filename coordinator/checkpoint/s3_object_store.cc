#include "coordinator/checkpoint/s3_object_store.h"

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/checkpoint/s3_request.h"
#include "coordinator/checkpoint/s3_upload.h"
#include "coordinator/checkpoint/s3_xml.h"

namespace tj {

S3ObjectStore::S3ObjectStore(S3Options options, std::string bucket, std::string prefix)
    : options_(std::move(options)), bucket_(std::move(bucket)), prefix_(std::move(prefix)) {}

std::string S3ObjectStore::Describe(std::string_view key) const {
  return DescribeS3Object(options_, bucket_, key);
}

absl::Status S3ObjectStore::CheckAccess() {
  // HEAD of a bucket has no body to carry the error code: a one-key listing does. Of the prefix
  // only (its trailing '/' too, so s3://b/team-a is not a listing of team-ab): credentials may be
  // scoped to it (an IAM policy's s3:prefix condition), and a bucket-level call would be refused.
  std::string query = "list-type=2&max-keys=1";
  if (!prefix_.empty()) absl::StrAppend(&query, "&prefix=", S3UriEncode(prefix_ + "/", false));
  S3Request list{.method = HttpMethod::kGet, .bucket = bucket_, .query = std::move(query)};
  return PerformS3Request(options_, list).status();
}

absl::StatusOr<ObjectUploadPtr> S3ObjectStore::BeginUpload(std::string_view key) {
  return std::make_unique<S3Upload>(options_, bucket_, std::string(key));
}

absl::Status S3ObjectStore::Put(std::string_view key, std::string_view data) {
  S3Request put{
      .method = HttpMethod::kPut, .bucket = bucket_, .key = std::string(key), .body = data};
  return PerformS3Request(options_, put).status();
}

absl::Status S3ObjectStore::PutIfUnchanged(std::string_view key, std::string_view data,
                                           const std::optional<std::string>& etag) {
  S3Request put{.method = HttpMethod::kPut,
                .bucket = bucket_,
                .key = std::string(key),
                .body = data,
                .if_match = etag.value_or(""),
                .if_none_match_any = !etag.has_value()};
  absl::Status status = PerformS3Request(options_, put).status();
  // If-Match on an object deleted since it was read: NoSuchKey, another writer's doing too.
  if (etag.has_value() && absl::IsNotFound(status)) return absl::AbortedError(status.message());
  return status;
}

absl::StatusOr<size_t> S3ObjectStore::ReadAt(std::string_view key, uint64_t offset, char* out,
                                             size_t size) {
  if (size == 0) return 0;
  S3Request get{.method = HttpMethod::kGet,
                .bucket = bucket_,
                .key = std::string(key),
                .range_offset = offset,
                .out = out,
                .out_size = size};
  // 416: the range starts at or past the end of the object.
  TJ_ASSIGN_OR_RETURN(const S3Response response, PerformS3Request(options_, get, 416));
  if (response.status == 416) return 0;
  // A server that ignores Range sends the whole object with 200.
  if (response.status != 206 && offset != 0) {
    return absl::InternalError(absl::StrCat(Describe(key), ": ranged GET answered HTTP ",
                                            response.status, " instead of 206"));
  }
  return response.out_bytes;
}

absl::StatusOr<std::string> S3ObjectStore::Get(std::string_view key, uint64_t max_bytes) {
  TJ_ASSIGN_OR_RETURN(std::optional<TaggedObject> object, GetTagged(key, max_bytes));
  if (!object.has_value())
    return absl::NotFoundError(absl::StrCat(Describe(key), ": no such object"));
  return std::move(object->data);
}

absl::StatusOr<std::optional<TaggedObject>> S3ObjectStore::GetTagged(std::string_view key,
                                                                     uint64_t max_bytes) {
  S3Request get{.method = HttpMethod::kGet, .bucket = bucket_, .key = std::string(key)};
  absl::StatusOr<S3Response> response = PerformS3Request(options_, get);
  if (absl::IsNotFound(response.status())) return std::optional<TaggedObject>();
  TJ_RETURN_IF_ERROR(response.status());
  if (response->body.size() > max_bytes) {
    return absl::DataLossError(absl::StrCat(Describe(key), ": ", response->body.size(),
                                            " bytes, more than the ", max_bytes, " expected"));
  }
  return std::optional<TaggedObject>(
      TaggedObject{std::move(response->body), std::move(response->etag)});
}

absl::StatusOr<std::optional<uint64_t>> S3ObjectStore::Size(std::string_view key) {
  S3Request head{.method = HttpMethod::kHead, .bucket = bucket_, .key = std::string(key)};
  TJ_ASSIGN_OR_RETURN(const S3Response response, PerformS3Request(options_, head, 404));
  if (response.status == 404) {
    // HEAD carries no error body: a missing bucket would look like a missing key, so ask.
    TJ_RETURN_IF_ERROR(CheckAccess());
    return std::optional<uint64_t>();
  }
  if (!response.content_length.has_value()) {
    return absl::InternalError(absl::StrCat(Describe(key), ": HEAD without Content-Length"));
  }
  return response.content_length;
}

absl::StatusOr<std::vector<ObjectInfo>> S3ObjectStore::List(std::string_view prefix) {
  std::vector<ObjectInfo> objects;
  std::string token;
  int pages = 0;
  do {
    // Query parameters in the order SigV4 canonicalises them (sorted by name).
    std::string query;
    if (!token.empty()) {
      absl::StrAppend(&query, "continuation-token=", S3UriEncode(token, false), "&");
    }
    absl::StrAppend(&query, "list-type=2&prefix=", S3UriEncode(prefix, false));
    S3Request list{.method = HttpMethod::kGet, .bucket = bucket_, .query = query};
    TJ_ASSIGN_OR_RETURN(const S3Response response, PerformS3Request(options_, list));
    absl::StatusOr<S3ListPage> page = ParseListObjectsV2(response.body);
    if (!page.ok()) {
      return absl::InternalError(
          absl::StrCat("listing ", Describe(prefix), ": ", page.status().message()));
    }
    for (ObjectInfo& info : page->objects) objects.push_back(std::move(info));
    // An endpoint that never ends a listing (the same token again, pages without end) is refused
    // rather than followed: the caller would loop, or grow, without bound.
    if (objects.size() > kMaxListedObjects || ++pages > kMaxListPages) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "listing ", Describe(prefix), ": more than ", kMaxListedObjects, " objects or ",
          kMaxListPages, " pages; a checkpoint prefix holds far fewer"));
    }
    // (A truncated page without a token is refused by the parser.)
    if (page->truncated && page->next_continuation_token == token) {
      return absl::InternalError(absl::StrCat("listing ", Describe(prefix),
                                              ": a truncated page with the continuation token it "
                                              "was asked with"));
    }
    token = page->truncated ? page->next_continuation_token : "";
  } while (!token.empty());
  return objects;
}

absl::Status S3ObjectStore::Delete(std::string_view key) {
  S3Request del{.method = HttpMethod::kDelete, .bucket = bucket_, .key = std::string(key)};
  return PerformS3Request(options_, del).status();
}

absl::StatusOr<std::unique_ptr<S3ObjectStore>> OpenS3ObjectStore(std::string_view url,
                                                                 S3Location* location) {
  TJ_ASSIGN_OR_RETURN(*location, ParseS3Location(url));
  TJ_ASSIGN_OR_RETURN(S3Options options, S3OptionsFromEnv());
  return std::make_unique<S3ObjectStore>(std::move(options), location->bucket, location->prefix);
}

}  // namespace tj
