#include "coordinator/metrics/http_request_path.h"

namespace tj {

std::string HttpRequestPath(std::string_view request_head) {
  constexpr std::string_view kGet = "GET ";
  if (!request_head.starts_with(kGet)) return "";
  request_head.remove_prefix(kGet.size());
  // The path ends at the query, the protocol, or the end of the line.
  return std::string(request_head.substr(0, request_head.find_first_of(" ?\r\n")));
}

}  // namespace tj
