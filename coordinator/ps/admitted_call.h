// Runs an RPC handler's body only while the PS is not draining (CallDrain), shared by the PS's
// services.
#pragma once

#include <grpcpp/support/status.h>

#include <optional>
#include <utility>

#include "coordinator/ps/call_drain.h"

namespace tj {

// Runs `handler` unless the service is draining. UNAVAILABLE tells clients the PS itself is gone,
// not that the request was wrong.
template <typename Handler>
grpc::Status IfAdmitted(CallDrain& drain, Handler&& handler) {
  std::optional<CallDrain::Admission> admission = drain.Admit();
  if (!admission.has_value()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "parameter server is shutting down");
  }
  return std::forward<Handler>(handler)();
}

}  // namespace tj
