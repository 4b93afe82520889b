// A dense Push from its arrival to its application: the body's announced size (kPushBytesHeader)
// is read first, the push is admitted to the PS's push window for that size (or answered "held
// back"), and only then is the body read, which must not be longer than announced. A push without
// an announcement (a client that does not send one) is admitted alone, taking the whole window; one
// whose announcement is not a size is refused before anything is read.
#pragma once

#include <grpcpp/server_context.h>

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "coordinator/ps/ps_dense_methods.h"
#include "coordinator/ps/push_announcement.h"
#include "coordinator/ps/push_window.h"
#include "coordinator/ps/variable_store.h"

namespace tj {

// The push's kPushBytesHeader, parsed (ParsePushAnnouncement).
PushAnnouncement ReadPushAnnouncement(const grpc::ServerContext& context,
                                      int64_t max_message_bytes);

struct PushAdmissionOptions {
  int ps_task = 0;
  // How long a push waits for room (at most half of what its caller's deadline leaves).
  absl::Duration hold = absl::Seconds(5);
  // The largest message the server receives (a larger announcement cannot be true).
  int64_t max_message_bytes = 0;
  // The largest push gRPC's memory bound lets the PS receive (LargestPushBytes); -1: no bound.
  int64_t largest_push_bytes = -1;
};

// Admits the push on `stream` to `window`, then reads and applies it to `store`. The status is the
// call's: RESOURCE_EXHAUSTED with kPushHeldBackTrailer when the window stayed full (nothing read),
// INVALID_ARGUMENT naming the peer for a malformed announcement or a body longer than announced
// (nothing applied), FAILED_PRECONDITION for an announcement beyond largest_push_bytes (nothing
// read: sent again, it would only be cancelled again by gRPC's memory bound).
grpc::Status ServeAdmittedPush(PushWindow& window, VariableStore& store, PsCounters& counters,
                               grpc::ServerContext& context, RawUnaryStream& stream,
                               const PushAdmissionOptions& options);

}  // namespace tj
