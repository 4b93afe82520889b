// Where checkpoint files can live besides a local directory: a flat store of named objects (an
// S3-compatible bucket, s3_object_store.h). An object appears whole or not at all: an upload is
// streamed in bounded pieces and only Finish() makes it visible, so a writer killed mid-upload
// leaves the previous objects as they were. Errors name the object (bucket, key, endpoint).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tj {

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
};

// One object being written. Bytes are sent as they pile up (a part at a time), so memory stays
// bounded whatever the object's size.
class ObjectUpload {
 public:
  virtual ~ObjectUpload() = default;  // without a successful Finish() nothing appears

  virtual const std::string& key() const = 0;
  virtual uint64_t bytes() const = 0;  // appended so far
  // After an error the upload is abandoned and every later call fails with that error.
  virtual absl::Status Append(std::string_view data) = 0;
  // Makes the object visible under its key, replacing any older one.
  virtual absl::Status Finish() = 0;
};
using ObjectUploadPtr = std::unique_ptr<ObjectUpload>;

// A small object as read, with the ETag that names this version of it.
struct TaggedObject {
  std::string data;
  std::string etag;
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // "s3://bucket/key (endpoint ...)": how errors and logs name an object.
  virtual std::string Describe(std::string_view key) const = 0;

  // The store is reachable, the bucket exists and the credentials are accepted: FailedPrecondition
  // naming a missing bucket, PermissionDenied naming refused credentials, Unavailable naming an
  // endpoint that does not answer.
  virtual absl::Status CheckAccess() = 0;

  virtual absl::StatusOr<ObjectUploadPtr> BeginUpload(std::string_view key) = 0;
  // One small object (a manifest) in one request.
  virtual absl::Status Put(std::string_view key, std::string_view data) = 0;

  // Compare-and-swap for small objects (a coordinator's claim): puts `data` only when the object is
  // still the version `etag` names, or with no `etag` only when it does not exist; Aborted when
  // another writer came first (or removed it). The server checks the condition atomically with
  // the write (S3's If-Match / If-None-Match).
  virtual absl::Status PutIfUnchanged(std::string_view key, std::string_view data,
                                      const std::optional<std::string>& etag) = 0;

  // Copies up to `size` bytes at `offset` into `out`; fewer only at the end of the object. NotFound
  // naming the object when it does not exist.
  virtual absl::StatusOr<size_t> ReadAt(std::string_view key, uint64_t offset, char* out,
                                        size_t size) = 0;
  // A whole small object; NotFound when absent, DataLoss when larger than `max_bytes`.
  virtual absl::StatusOr<std::string> Get(std::string_view key, uint64_t max_bytes) = 0;
  // The same with its ETag, for PutIfUnchanged; nullopt when absent.
  virtual absl::StatusOr<std::optional<TaggedObject>> GetTagged(std::string_view key,
                                                                uint64_t max_bytes) = 0;
  // The object's size; nullopt when it does not exist.
  virtual absl::StatusOr<std::optional<uint64_t>> Size(std::string_view key) = 0;
  // Every object whose key starts with `prefix`, in key order.
  virtual absl::StatusOr<std::vector<ObjectInfo>> List(std::string_view prefix) = 0;
  // Removing an absent object is not an error.
  virtual absl::Status Delete(std::string_view key) = 0;
};
using ObjectStorePtr = std::unique_ptr<ObjectStore>;

}  // namespace tj
