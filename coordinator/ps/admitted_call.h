// Runs an RPC handler's body only while the PS is not draining (CallDrain), shared by the PS's
// services; no exception leaves a handler (gRPC would answer UNKNOWN and name nothing).
#pragma once

#include <grpcpp/support/status.h>

#include <exception>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "coordinator/ps/call_drain.h"

namespace tj {

// Runs `handler` unless the service is draining. UNAVAILABLE tells clients the PS itself is gone,
// not that the request was wrong. The decoders bound every allocation by the bytes that arrived,
// so an exception here is a bug or an exhausted machine: it is answered as such, not as UNKNOWN.
template <typename Handler>
grpc::Status IfAdmitted(CallDrain& drain, Handler&& handler) {
  std::optional<CallDrain::Admission> admission = drain.Admit();
  if (!admission.has_value()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "parameter server is shutting down");
  }
  try {
    return std::forward<Handler>(handler)();
  } catch (const std::bad_alloc&) {
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "parameter server: out of memory handling the call");
  } catch (const std::exception& e) {
    return grpc::Status(grpc::StatusCode::INTERNAL,
                        std::string("parameter server: unexpected error: ") + e.what());
  }
}

}  // namespace tj
