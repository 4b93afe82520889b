// The ObjectStore of one S3-compatible bucket (s3_request.h does the HTTP). Uploads are multipart
// with parts of S3Options::part_bytes, buffered one part at a time; an upload that is never
// finished is aborted, so the bucket keeps no stray parts and the key no half-written object.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "coordinator/checkpoint/object_store.h"
#include "coordinator/checkpoint/s3_location.h"

namespace tj {

// Bounds on one List: a checkpoint prefix holds a few files per checkpoint kept, so these are
// only reached by an endpoint that never ends its listing.
inline constexpr size_t kMaxListedObjects = size_t{1} << 20;
inline constexpr int kMaxListPages = 10000;

class S3ObjectStore : public ObjectStore {
 public:
  // `prefix` (S3Location::prefix: no leading or trailing '/') is where the store's objects live;
  // CheckAccess asks only there, so credentials scoped to s3://bucket/prefix suffice. Empty: the
  // whole bucket.
  S3ObjectStore(S3Options options, std::string bucket, std::string prefix = "");

  const S3Options& options() const { return options_; }
  const std::string& bucket() const { return bucket_; }

  std::string Describe(std::string_view key) const override;
  absl::Status CheckAccess() override;
  absl::StatusOr<ObjectUploadPtr> BeginUpload(std::string_view key) override;
  absl::Status Put(std::string_view key, std::string_view data) override;
  absl::Status PutIfUnchanged(std::string_view key, std::string_view data,
                              const std::optional<std::string>& etag) override;
  absl::StatusOr<size_t> ReadAt(std::string_view key, uint64_t offset, char* out,
                                size_t size) override;
  absl::StatusOr<std::string> Get(std::string_view key, uint64_t max_bytes) override;
  absl::StatusOr<std::optional<TaggedObject>> GetTagged(std::string_view key,
                                                        uint64_t max_bytes) override;
  absl::StatusOr<std::optional<uint64_t>> Size(std::string_view key) override;
  absl::StatusOr<std::vector<ObjectInfo>> List(std::string_view prefix) override;
  absl::Status Delete(std::string_view key) override;

 private:
  const S3Options options_;
  const std::string bucket_;
  const std::string prefix_;
};

// The store for an s3://bucket/prefix location with options from the environment
// (S3OptionsFromEnv); `*location` receives the parsed location.
absl::StatusOr<std::unique_ptr<S3ObjectStore>> OpenS3ObjectStore(std::string_view url,
                                                                 S3Location* location);

}  // namespace tj
