#include "coordinator/ps/push_held_back.h"

#include <string_view>

#include "coordinator/ps/push_window.h"

namespace tj {
namespace {

// gRPC's text for a stream the server reset with ENHANCE_YOUR_CALM (HTTP/2 error 11), which its
// memory quota's reclaimer sends. Matched exactly: it is gRPC's, not a server's free text.
constexpr std::string_view kBuffersFullReset = "Received RST_STREAM with error code 11";

}  // namespace

bool PushHeldBack(const grpc::Status& status,
                  const std::multimap<grpc::string_ref, grpc::string_ref>& trailers) {
  if (status.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED) return false;
  if (trailers.find(grpc::string_ref(kPushHeldBackTrailer.data(), kPushHeldBackTrailer.size())) !=
      trailers.end()) {
    return true;
  }
  return status.error_message() == kBuffersFullReset;
}

}  // namespace tj
