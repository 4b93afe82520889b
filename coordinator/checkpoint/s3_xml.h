// The few S3 XML responses the object store reads (an error, a new multipart upload, a page of
// ListObjectsV2), parsed with libxml2. Element names are matched without their namespace. The
// endpoint may be hostile: bodies over kMaxS3XmlBytes and bodies that declare a DTD (where entity
// bombs and external entities live; S3 never sends one) are refused, nothing is fetched from the
// network, and libxml2 bounds nesting depth.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/checkpoint/object_store.h"

namespace tj {

// A page of ListObjectsV2 (at most 1,000 keys of at most 1,024 bytes each) is under 2 MiB.
inline constexpr size_t kMaxS3XmlBytes = size_t{16} << 20;

struct S3ErrorBody {
  std::string code;  // NoSuchBucket, InvalidAccessKeyId, SignatureDoesNotMatch, ...
  std::string message;
};

struct S3ListPage {
  std::vector<ObjectInfo> objects;
  bool truncated = false;
  std::string next_continuation_token;
};

// nullopt when `body` is not an <Error> document (or is refused as above).
std::optional<S3ErrorBody> ParseS3Error(std::string_view body);
// InvalidArgument naming what is missing when `body` is not the document expected.
absl::StatusOr<std::string> ParseInitiateMultipartUpload(std::string_view body);
absl::StatusOr<S3ListPage> ParseListObjectsV2(std::string_view body);

}  // namespace tj
