// The one thing the metrics/health server reads from a request: the path of a GET. Apart from the
// socket code so the parser of outside bytes is tested and fuzzed on its own (fuzz/).
#pragma once

#include <string>
#include <string_view>

namespace tj {

// "GET /path?query HTTP/1.1\r\n..." -> "/path". Empty for anything that is not a GET request line
// (the server answers 404).
std::string HttpRequestPath(std::string_view request_head);

}  // namespace tj
