#include "tests/operator/kube/kube_cluster_env.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

namespace tj::kube::testing {
namespace {

std::string& Kubeconfig() {
  static std::string s;
  return s;
}
std::string& SkipReason() {
  static std::string s;
  return s;
}
std::string& Workdir() {
  static std::string s;
  return s;
}

std::string ScriptDir() { return std::string(TJ_SOURCE_DIR) + "/tests/kube-test-cluster"; }

}  // namespace

std::string RunCommand(const std::string& command, bool* ok) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *ok = false;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  const int rc = ::pclose(pipe);
  *ok = rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

const std::string& KubeClusterEnvironment::kubeconfig() { return Kubeconfig(); }
const std::string& KubeClusterEnvironment::skip_reason() { return SkipReason(); }
const std::string& KubeClusterEnvironment::workdir() { return Workdir(); }

void KubeClusterEnvironment::SetUp() {
  bool ok = false;
  RunCommand("command -v go >/dev/null 2>&1", &ok);
  if (!ok) {
    SkipReason() =
        "\n\n*** SKIPPING the Kubernetes integration tests: `go` is not on PATH, so the control "
        "plane of tests/kube-test-cluster/ cannot be built. Install Go to run them. ***\n";
    std::cerr << SkipReason() << std::flush;
    return;
  }
  const std::string bin = RunCommand(ScriptDir() + "/build.sh", &ok);
  ASSERT_TRUE(ok) << "tests/kube-test-cluster/build.sh failed (Go is installed, so this is a "
                     "real failure; see its stderr above)";
  char tmpl[] = "/tmp/tj-kube-it-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  Workdir() = tmpl;
  const std::string kubeconfig =
      RunCommand("TJ_KUBE_BIN='" + bin + "' " + ScriptDir() + "/up.sh " + Workdir(), &ok);
  ASSERT_TRUE(ok) << "tests/kube-test-cluster/up.sh " << Workdir() << " failed (log tails above)";
  Kubeconfig() = kubeconfig;
  std::cerr << "kube integration: control plane up, kubeconfig " << kubeconfig << std::endl;
}

void KubeClusterEnvironment::TearDown() {
  if (Workdir().empty()) return;
  bool ok = false;
  RunCommand(ScriptDir() + "/down.sh " + Workdir() + " >&2", &ok);
  EXPECT_TRUE(ok) << "down.sh " << Workdir() << " failed";
  if (ok && std::getenv("TJ_KUBE_KEEP_WORKDIR") == nullptr) {
    std::error_code ec;
    std::filesystem::remove_all(Workdir(), ec);
  }
}

}  // namespace tj::kube::testing
