// Whether a push's answer means "held back, send it again": the PS's push window stayed full
// (RESOURCE_EXHAUSTED with kPushHeldBackTrailer: nothing was read or applied), or the PS's gRPC
// memory bound was reached and gRPC cancelled the stream to free memory (RST_STREAM with
// ENHANCE_YOUR_CALM, "Buffers full", which a client sees as RESOURCE_EXHAUSTED "Received
// RST_STREAM with error code 11"). Any other RESOURCE_EXHAUSTED (a message over a size limit) is
// not: sent again, it would fail again.
#pragma once

#include <grpcpp/support/status.h>
#include <grpcpp/support/string_ref.h>

#include <map>

namespace tj {

bool PushHeldBack(const grpc::Status& status,
                  const std::multimap<grpc::string_ref, grpc::string_ref>& trailers);

}  // namespace tj
