// A GoogleTest environment that starts the real Kueue controller manager
// (tests/kube-test-cluster/kueue-up.sh, built by scripts/install-kueue.sh) against the control
// plane of KubeClusterEnvironment, registered after it. Skips with that environment (no Go);
// down.sh stops Kueue with the control plane.
#pragma once

#include <string>

#include "gtest/gtest.h"
#include "tests/operator/kube/kube_cluster_env.h"

namespace tj::op::testing {

class KueueEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    using kube::testing::KubeClusterEnvironment;
    if (!KubeClusterEnvironment::skip_reason().empty() ||
        KubeClusterEnvironment::workdir().empty()) {
      return;
    }
    const std::string root = TJ_SOURCE_DIR;
    bool ok = false;
    const std::string dir = kube::testing::RunCommand(root + "/scripts/install-kueue.sh", &ok);
    ASSERT_TRUE(ok) << "scripts/install-kueue.sh failed (Go is installed, so this is a real "
                       "failure; see its stderr above)";
    kube::testing::RunCommand("TJ_KUEUE_DIR='" + dir + "' " + root +
                                  "/tests/kube-test-cluster/kueue-up.sh '" +
                                  KubeClusterEnvironment::workdir() + "' >&2",
                              &ok);
    ASSERT_TRUE(ok) << "tests/kube-test-cluster/kueue-up.sh failed (log tail above)";
    up_ = true;
  }
  static bool up() { return up_; }

 private:
  static inline bool up_ = false;
};

}  // namespace tj::op::testing
