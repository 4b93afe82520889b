// Tells a checkpoint save that failed because its storage refused or did not answer (credentials
// revoked or rotated, a bucket deleted, an endpoint down) from one that failed for any other
// reason (a newer coordinator's claim, a lost PS, a bad shard). The first kind leaves the PS state
// and the previous checkpoint intact, so a training loop may go on and save again later; the
// second must end this coordinator as before.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "coordinator/base/strings.h"

namespace tj {

// Type URL of the payload the S3 client puts on a status whose bucket is missing, whose
// credentials were refused, or whose endpoint did not answer. Its value is the endpoint.
inline constexpr std::string_view kCheckpointStoragePayloadUrl = "tj.dev/checkpoint_storage";

inline absl::Status MarkCheckpointStorageError(absl::Status status, std::string_view endpoint) {
  status.SetPayload(AbslView(kCheckpointStoragePayloadUrl), absl::Cord(std::string(endpoint)));
  return status;
}

// Marked as above (in this process), or PermissionDenied from anywhere: a PS's shard upload
// refused, whose payload does not cross gRPC, or a directory the process may no longer write.
inline bool IsCheckpointStorageError(const absl::Status& status) {
  return absl::IsPermissionDenied(status) ||
         status.GetPayload(AbslView(kCheckpointStoragePayloadUrl)).has_value();
}

}  // namespace tj
