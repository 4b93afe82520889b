// An ObjectUpload to S3: bytes gather in a buffer of one part; each full part is sent with
// UploadPart as soon as it fills, and Finish() sends the rest and completes the upload. An object
// that never filled a part goes up in one PutObject instead. Dropped before Finish(), a multipart
// upload is aborted (AbortMultipartUpload), so nothing appears under the key.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "coordinator/checkpoint/object_store.h"
#include "coordinator/checkpoint/s3_location.h"

namespace tj {

class S3Upload : public ObjectUpload {
 public:
  S3Upload(const S3Options& options, std::string bucket, std::string key);
  ~S3Upload() override;

  const std::string& key() const override { return key_; }
  uint64_t bytes() const override { return bytes_; }
  absl::Status Append(std::string_view data) override;
  absl::Status Finish() override;

 private:
  absl::Status SendPart();
  absl::Status Complete();
  absl::Status Fail(absl::Status error);

  const S3Options& options_;  // the store's, which outlives its uploads
  const std::string bucket_;
  const std::string key_;
  std::string part_;                // bytes not yet sent, at most options_.part_bytes
  std::string upload_id_;           // empty until the first part goes out
  std::vector<std::string> etags_;  // of parts 1..n
  uint64_t bytes_ = 0;
  absl::Status error_;
  bool finished_ = false;
};

}  // namespace tj
