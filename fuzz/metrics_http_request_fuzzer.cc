// The request head the metrics/health HTTP server reads from any client that connects
// (coordinator/metrics/metrics_http_server.cc reads up to 8 KiB and keeps only the GET path).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "coordinator/metrics/http_request_path.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view head(reinterpret_cast<const char*>(data), size);
  const std::string path = tj::HttpRequestPath(head);
  // The path is a piece of the request line, never longer than the request.
  if (path.size() > size) __builtin_trap();
  return 0;
}
