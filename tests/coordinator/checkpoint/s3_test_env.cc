#include "tests/coordinator/checkpoint/s3_test_env.h"

#include <iostream>

namespace tj::testing {
namespace {

std::unique_ptr<S3TestServer>& Server() {
  static std::unique_ptr<S3TestServer> server;
  return server;
}
std::string& SkipReason() {
  static std::string reason;
  return reason;
}

// Registered before main() runs, as gtest_main leaves no other hook.
[[maybe_unused]] ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new S3TestEnvironment());

}  // namespace

void S3TestEnvironment::SetUp() {
  absl::StatusOr<std::string> weed = FindOrBuildWeed(&SkipReason());
  ASSERT_TRUE(weed.ok()) << weed.status();
  if (weed->empty()) {
    std::cerr << SkipReason() << std::flush;
    return;
  }
  absl::StatusOr<std::unique_ptr<S3TestServer>> server = S3TestServer::Start(*weed);
  ASSERT_TRUE(server.ok()) << server.status();
  Server() = *std::move(server);
  std::cerr << "S3 test server (" << *weed << ") at " << Server()->endpoint() << std::endl;
}

void S3TestEnvironment::TearDown() { Server().reset(); }

S3TestServer* S3TestEnvironment::server() { return Server().get(); }
const std::string& S3TestEnvironment::skip_reason() { return SkipReason(); }

}  // namespace tj::testing
