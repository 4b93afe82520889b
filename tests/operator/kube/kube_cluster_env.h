// A GoogleTest environment that starts one real control plane (tests/kube-test-cluster/) per test
// binary and stops it at the end. Without `go` it skips every test with a loud message; if `go`
// exists and the build or start fails, the run fails.
#pragma once

#include <string>

#include "gtest/gtest.h"

namespace tj::kube::testing {

class KubeClusterEnvironment : public ::testing::Environment {
 public:
  void SetUp() override;
  void TearDown() override;

  // Set once SetUp succeeded.
  static const std::string& kubeconfig();
  // Non-empty when the tests must skip (no Go toolchain).
  static const std::string& skip_reason();
  static const std::string& workdir();
};

// Runs `command` through /bin/sh; returns its stdout, trailing newline removed. `ok` false on a
// non-zero exit. stderr passes through to the test log.
std::string RunCommand(const std::string& command, bool* ok);

}  // namespace tj::kube::testing
