// The fixture of tj-operator's process tests (operator_process_test.cc, operator_rbac_test.cc,
// one binary, one control plane): the CRD applied, the chart's ServiceAccount and RBAC rendered by
// `helm template` and applied, a kubeconfig holding only that ServiceAccount's token, operator
// processes started and stopped, and the test playing the kubelet.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "operator/kube/cpprest_transport.h"
#include "operator/kube/kube_client_impl.h"
#include "operator/kube/kube_config.h"
#include "operator/kube/resource.h"
#include "tests/helm/helm_support.h"
#include "tests/operator/controller/kubelet_status.h"
#include "tests/operator/kube/kube_cluster_env.h"
#include "tests/support/wait_for.h"

namespace tj::op {

using kube::testing::KubeClusterEnvironment;
using nlohmann::json;

inline constexpr char kOperatorNamespace[] = "tj-system";
inline constexpr char kJobNamespace[] = "op-it";

inline std::string Quote(const std::string& s) { return "'" + s + "'"; }

inline std::string Shell(const std::string& command, bool* ok = nullptr) {
  bool success = false;
  std::string out = kube::testing::RunCommand(command + " 2>&1", &success);
  if (ok) *ok = success;
  return out;
}

inline std::string Kubectl(const std::string& args, bool* ok = nullptr,
                    const std::string& kubeconfig = "") {
  return Shell("kubectl --kubeconfig=" +
                   Quote(kubeconfig.empty() ? KubeClusterEnvironment::kubeconfig() : kubeconfig) +
                   " " + args,
               ok);
}

inline int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t length = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  close(fd);
  return ntohs(addr.sin_port);
}

struct OperatorProcess {
  std::string name;
  pid_t pid = -1;
  int metrics_port = 0;
  int health_port = 0;
  std::string log;
};

inline OperatorProcess StartOperator(const std::string& name, const std::string& kubeconfig,
                              const std::string& workdir,
                              const std::string& lease_id = "tj-operator-it",
                              const std::vector<std::string>& extra_args = {},
                              const std::map<std::string, std::string>& env = {}) {
  OperatorProcess p;
  p.name = name;
  p.metrics_port = FreePort();
  p.health_port = FreePort();
  p.log = workdir + "/" + name + ".log";
  std::vector<std::string> args = {std::string(TJ_BIN_DIR) + "/tj-operator",
                                   "--kubeconfig=" + kubeconfig,
                                   "--leader-elect=true",
                                   std::string("--leader-election-namespace=") + kOperatorNamespace,
                                   "--leader-election-id=" + lease_id,
                                   absl::StrCat("--metrics-address=127.0.0.1:", p.metrics_port),
                                   absl::StrCat("--health-address=127.0.0.1:", p.health_port),
                                   "--workers=2",
                                   "--log-format=json"};
  for (const std::string& extra : extra_args) {  // "--flag=value" replaces the default one
    const std::string flag = extra.substr(0, extra.find('=') + 1);
    std::erase_if(args, [&](const std::string& a) { return absl::StartsWith(a, flag); });
    args.push_back(extra);
  }
  p.pid = fork();
  if (p.pid == 0) {
    const int fd = open(p.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    setenv("POD_NAME", name.c_str(), 1);
    for (const auto& [key, value] : env) setenv(key.c_str(), value.c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return p;
}

// Exit status of a stopped process; -1 if it did not exit within the timeout.
inline int StopOperator(OperatorProcess& p, absl::Duration timeout = absl::Seconds(30)) {
  if (p.pid <= 0) return -1;
  kill(p.pid, SIGTERM);
  int status = 0;
  const bool exited =
      testing::WaitFor([&] { return waitpid(p.pid, &status, WNOHANG) == p.pid; }, timeout);
  if (!exited) {
    kill(p.pid, SIGKILL);
    waitpid(p.pid, &status, 0);
  }
  p.pid = -1;
  return exited && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

class OperatorProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!KubeClusterEnvironment::skip_reason().empty()) {
      GTEST_SKIP() << KubeClusterEnvironment::skip_reason();
    }
    std::string skip, error;
    helm_ = helm_testing::HelmBinary(&skip, &error);
    if (!skip.empty()) GTEST_SKIP() << skip;
    ASSERT_TRUE(error.empty()) << error;
    workdir_ = KubeClusterEnvironment::workdir();

    bool ok = false;
    std::string out = Kubectl(
        "apply -f " + Quote(std::string(TJ_SOURCE_DIR) + "/crds/trainingjob.dev_trainingjobs.yaml"),
        &ok);
    ASSERT_TRUE(ok) << out;
    ASSERT_TRUE(testing::WaitFor([] {
      return Kubectl(
                 "get crd trainingjobs.trainingjob.dev -o "
                 "jsonpath='{.status.conditions[?(@.type==\"Established\")].status}'") == "True";
    }));
    for (const char* ns : {kOperatorNamespace, kJobNamespace}) {
      out = Kubectl(absl::StrCat("create namespace ", ns), &ok);
      ASSERT_TRUE(ok || absl::StrContains(out, "AlreadyExists")) << out;
    }

    // The chart's identity and permissions, exactly as `helm install` would create them.
    operator_kubeconfig_ = InstallChartRbac("it", "");
    ASSERT_FALSE(operator_kubeconfig_.empty());

    auto config = kube::LoadKubeConfigFiles({KubeClusterEnvironment::kubeconfig()});
    ASSERT_TRUE(config.ok()) << config.status();
    auto transport = kube::CppRestTransport::Create(*config);
    ASSERT_TRUE(transport.ok()) << transport.status();
    admin_ = std::make_unique<kube::KubeClientImpl>(
        std::shared_ptr<kube::HttpTransport>(std::move(*transport)));
  }

  void TearDown() override {
    if (!restore_crd_.is_null()) {
      // The schema comes back for the next case: put the original spec over the current object.
      bool ok = false;
      const std::string current = Kubectl("get crd trainingjobs.trainingjob.dev -o json", &ok);
      json restored = restore_crd_;
      if (ok) {
        restored["metadata"]["resourceVersion"] =
            json::parse(current)["metadata"]["resourceVersion"];
      }
      EXPECT_TRUE(ReplaceCrd(restored)) << "the CRD's schema was not restored";
    }
    for (OperatorProcess* p : {&a_, &b_}) {
      if (p->pid > 0) {
        StopOperator(*p);
        std::cerr << "---- " << p->name << " log (tail) ----\n"
                  << ReadFile(p->log).substr(std::max<size_t>(ReadFile(p->log).size(), 4000) - 4000)
                  << "\n";
      }
    }
  }

  // Renders the chart (release `release`, `helm template` flags `sets`), applies its
  // ServiceAccount and RBAC, and returns a kubeconfig holding only that ServiceAccount's token
  // ("" on failure, with the test failed).
  std::string InstallChartRbac(const std::string& release, const std::string& sets) {
    std::string error;
    bool ok = false;
    const helm_testing::CommandOutput rendered = helm_testing::Helm(
        helm_, absl::StrCat("template ", release, " ", Quote(helm_testing::ChartDir()),
                            " --namespace ", kOperatorNamespace, " --skip-crds ", sets));
    EXPECT_TRUE(rendered.ok) << rendered.output;
    std::vector<json> objects = helm_testing::ParseManifests(rendered.output, &error);
    EXPECT_TRUE(error.empty()) << error;
    std::string service_account;
    const std::string rbac_file = absl::StrCat(workdir_, "/rbac-", release, ".json");
    json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
    for (const json& o : objects) {
      const std::string kind = o.value("kind", "");
      if (kind == "ServiceAccount") service_account = o["metadata"]["name"];
      if (kind == "ServiceAccount" || kind == "ClusterRole" || kind == "ClusterRoleBinding" ||
          kind == "Role" || kind == "RoleBinding") {
        list["items"].push_back(o);
      }
    }
    std::ofstream(rbac_file) << list.dump();
    EXPECT_FALSE(service_account.empty()) << "the chart renders no ServiceAccount";
    if (service_account.empty()) return "";
    std::string out = Kubectl("apply -f " + Quote(rbac_file), &ok);
    EXPECT_TRUE(ok) << out;
    const std::string token = Kubectl(absl::StrCat("-n ", kOperatorNamespace, " create token ",
                                                   service_account, " --duration=1h"),
                                      &ok);
    EXPECT_TRUE(ok) << token;
    if (!ok) return "";

    // A kubeconfig with that token and nothing else.
    const std::string kubeconfig = absl::StrCat(workdir_, "/operator-", release, ".kubeconfig");
    Shell("cp " + Quote(KubeClusterEnvironment::kubeconfig()) + " " + Quote(kubeconfig));
    const std::string cluster =
        Kubectl("config view -o jsonpath='{.clusters[0].name}'", nullptr, kubeconfig);
    for (const std::string& args :
         {"config set-credentials operator --token=" + token,
          "config set-context operator --cluster=" + cluster + " --user=operator",
          std::string("config use-context operator")}) {
      out = Kubectl(args, &ok, kubeconfig);
      EXPECT_TRUE(ok) << out;
    }
    out = Kubectl("auth whoami -o jsonpath='{.status.userInfo.username}'", &ok, kubeconfig);
    EXPECT_EQ(out, ServiceAccountUser(service_account));
    return kubeconfig;
  }

  static std::string ServiceAccountUser(const std::string& service_account) {
    return absl::StrCat("system:serviceaccount:", kOperatorNamespace, ":", service_account);
  }

  // `kubectl replace` of the CRD (its metadata.resourceVersion makes it conditional).
  // Without kubectl's last-applied annotation: kubectl replace rewrites an annotation it finds from
  // the object it sends, resourceVersion included, and the next `kubectl apply` of the shipped CRD
  // then patches resourceVersion away and is refused ("must be specified for an update").
  bool ReplaceCrd(json crd) {
    crd.erase("status");
    if (crd["metadata"].contains("annotations")) {
      crd["metadata"]["annotations"].erase("kubectl.kubernetes.io/last-applied-configuration");
    }
    const std::string path = workdir_ + "/crd-replace.json";
    std::ofstream(path) << crd.dump();
    bool ok = false;
    const std::string out = Kubectl("replace -f " + Quote(path), &ok);
    if (!ok) std::cerr << out << "\n";
    return ok;
  }

  std::map<std::string, json> Pods() {
    std::map<std::string, json> out;
    auto list = admin_->List(*kube::Resource("pods", kJobNamespace), {});
    if (!list.ok()) return out;
    for (const json& pod : (*list)["items"]) out[pod["metadata"]["name"]] = pod;
    return out;
  }
  std::string State() {
    return Kubectl(
        absl::StrCat("-n ", kJobNamespace, " get tj digits -o jsonpath='{.status.state}'"));
  }
  std::string LeaseHolder() {
    return Kubectl(absl::StrCat("-n ", kOperatorNamespace,
                                " get lease tj-operator-it -o jsonpath='{.spec.holderIdentity}'"));
  }
  void SetPodStatus(const std::string& pod, const json& status) {
    kube::ResourceRef ref = *kube::Resource("pods", kJobNamespace, pod);
    ref.subresource = "status";
    auto patched = admin_->MergePatch(ref, {{"status", status}});
    ASSERT_TRUE(patched.ok()) << patched.status();
  }
  static json Running(const std::string& ip) { return kubelet::RunningPodStatus(ip); }
  static json Exited(int code) { return kubelet::ExitedPodStatus(code); }

  std::string helm_;
  std::string workdir_;
  std::string operator_kubeconfig_;
  std::unique_ptr<kube::KubeClient> admin_;
  OperatorProcess a_;
  OperatorProcess b_;
  json restore_crd_;  // set while a case runs with a schemaless CRD
};

}  // namespace tj::op
