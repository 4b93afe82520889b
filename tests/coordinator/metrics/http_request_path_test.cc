// The request-line parser of the metrics/health server: only a GET's path is read.
#include "coordinator/metrics/http_request_path.h"

#include <gtest/gtest.h>

namespace tj {
namespace {

TEST(HttpRequestPathTest, TheGetPathWithoutQueryOrProtocol) {
  EXPECT_EQ(HttpRequestPath("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), "/metrics");
  EXPECT_EQ(HttpRequestPath("GET /healthz?verbose=1 HTTP/1.1\r\n\r\n"), "/healthz");
  // A request line without a protocol (HTTP/0.9) ends at the line break, not past it.
  EXPECT_EQ(HttpRequestPath("GET /readyz\r\n"), "/readyz");
}

TEST(HttpRequestPathTest, AnythingElseHasNoPath) {
  EXPECT_EQ(HttpRequestPath("POST /metrics HTTP/1.1\r\n\r\n"), "");
  EXPECT_EQ(HttpRequestPath("GET"), "");
  EXPECT_EQ(HttpRequestPath(""), "");
  EXPECT_EQ(HttpRequestPath("GET "), "");
  EXPECT_EQ(HttpRequestPath(std::string_view("GET /\0x", 7)), std::string("/\0x", 3));
}

}  // namespace
}  // namespace tj
