// The S3 server shared by every test of one test binary (s3_checkpoint_test runs as one ctest
// test): started once by S3TestEnvironment, skipped with a message when it cannot be built.
#pragma once

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tests/support/s3_test_server.h"

namespace tj::testing {

class S3TestEnvironment : public ::testing::Environment {
 public:
  void SetUp() override;
  void TearDown() override;

  static S3TestServer* server();
  static const std::string& skip_reason();
};

// In a test body: skips when there is no server.
#define TJ_REQUIRE_S3_SERVER()                                         \
  do {                                                                 \
    if (::tj::testing::S3TestEnvironment::server() == nullptr) {       \
      GTEST_SKIP() << ::tj::testing::S3TestEnvironment::skip_reason(); \
    }                                                                  \
  } while (0)

}  // namespace tj::testing
