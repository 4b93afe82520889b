// `helm install` of helm/trainingjob-operator into a real control plane (tests/kube-test-cluster/):
// the CRD, ServiceAccount, RBAC, Deployment, Service and dashboard exist (the operator pods stay
// Pending: there is no node), the ServiceAccount may do exactly what the operator needs
// (`kubectl auth can-i --as`), and `helm uninstall` removes everything but the CRD, which helm
// never deletes (that would delete every TrainingJob).
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/helm/helm_support.h"
#include "tests/operator/kube/kube_cluster_env.h"
#include "tests/support/wait_for.h"

namespace tj::helm_testing {
namespace {

using kube::testing::KubeClusterEnvironment;
using kube::testing::RunCommand;
using ::testing::HasSubstr;

constexpr char kNamespace[] = "tj-system";
constexpr char kRelease[] = "tj";
constexpr char kFullname[] = "tj-trainingjob-operator";
constexpr char kServiceAccount[] = "system:serviceaccount:tj-system:tj-trainingjob-operator";

struct Result {
  bool ok = false;
  std::string output;
};

Result Kubectl(const std::string& args) {
  Result r;
  r.output = RunCommand("kubectl --kubeconfig='" + KubeClusterEnvironment::kubeconfig() +
                            "' --request-timeout=30s " + args + " 2>&1",
                        &r.ok);
  return r;
}

bool Exists(const std::string& what) { return Kubectl("get " + what + " -o name").ok; }

// Whether the chart's ServiceAccount may `verb` on "resource[.group][/subresource]", asked with
// a SubjectAccessReview (`kubectl auth can-i --as` guesses the group of resource types the server
// does not serve, such as Volcano's podgroups here, and answers for the wrong one).
bool CanI(const std::string& verb, const std::string& what, const std::string& ns) {
  std::string resource = what, subresource, group;
  if (size_t slash = resource.find('/'); slash != std::string::npos) {
    subresource = resource.substr(slash + 1);
    resource.resize(slash);
  }
  if (size_t dot = resource.find('.'); dot != std::string::npos) {
    group = resource.substr(dot + 1);
    resource.resize(dot);
  }
  const nlohmann::json review = {
      {"apiVersion", "authorization.k8s.io/v1"},
      {"kind", "SubjectAccessReview"},
      {"spec",
       {{"user", kServiceAccount},
        {"groups",
         {"system:serviceaccounts", "system:serviceaccounts:tj-system", "system:authenticated"}},
        {"resourceAttributes",
         {{"verb", verb},
          {"group", group},
          {"resource", resource},
          {"subresource", subresource},
          {"namespace", ns}}}}}};
  const std::string file = KubeClusterEnvironment::workdir() + "/access-review.json";
  std::ofstream(file) << review.dump();
  const Result r = Kubectl("create -o jsonpath='{.status.allowed}' -f '" + file + "'");
  EXPECT_TRUE(r.ok) << r.output;
  return r.output == "true";
}

class HelmInstallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!KubeClusterEnvironment::skip_reason().empty()) {
      GTEST_SKIP() << KubeClusterEnvironment::skip_reason();
    }
    std::string skip, error;
    helm_ = HelmBinary(&skip, &error);
    ASSERT_TRUE(error.empty()) << error;
    ASSERT_FALSE(helm_.empty()) << skip;
  }

  CommandOutput HelmCmd(const std::string& args) {
    return Helm(helm_, "--kubeconfig '" + KubeClusterEnvironment::kubeconfig() + "' " + args);
  }

  std::string helm_;
};

TEST_F(HelmInstallTest, InstallCreatesTheOperatorAndUninstallRemovesIt) {
  const CommandOutput install =
      HelmCmd(absl::StrCat("install ", kRelease, " ", ChartDir(), " --namespace ", kNamespace,
                           " --create-namespace --set gangScheduler=volcano --timeout 2m"));
  ASSERT_TRUE(install.ok) << install.output;
  EXPECT_THAT(install.output, HasSubstr("STATUS: deployed"));

  // The CRD from the chart's crds/ is served.
  EXPECT_TRUE(testing::WaitFor(
      [] {
        return Kubectl(
                   "get crd trainingjobs.trainingjob.dev -o "
                   "jsonpath='{.status.conditions[?(@.type==\"Established\")].status}'")
                   .output == "True";
      },
      absl::Seconds(60)));
  EXPECT_TRUE(Kubectl("get tj -A").ok);

  const std::string ns = std::string(" -n ") + kNamespace;
  for (const std::string& object : std::vector<std::string>{
           "serviceaccount/" + std::string(kFullname) + ns,
           "clusterrole/" + std::string(kFullname),
           "clusterrolebinding/" + std::string(kFullname),
           "clusterrole/" + std::string(kFullname) + "-nodes",
           "clusterrolebinding/" + std::string(kFullname) + "-nodes",
           "role/" + std::string(kFullname) + "-leader-election" + ns,
           "rolebinding/" + std::string(kFullname) + "-leader-election" + ns,
           "deployment/" + std::string(kFullname) + ns,
           "service/" + std::string(kFullname) + "-metrics" + ns,
           "configmap/" + std::string(kFullname) + "-dashboard" + ns,
       }) {
    EXPECT_TRUE(Exists(object)) << object;
  }
  // The Deployment's pods are created (and stay Pending: no node runs them).
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        return Kubectl("get pods" + ns + " -l app.kubernetes.io/instance=tj -o name")
                   .output.find("pod/") != std::string::npos;
      },
      absl::Seconds(60)))
      << Kubectl("describe deployment" + ns).output;

  // What the ServiceAccount may do: what tj-operator needs, in any namespace...
  struct Grant {
    std::string verb, resource, ns;
    bool allowed;
  };
  for (const Grant& g : std::vector<Grant>{
           {"watch", "trainingjobs.trainingjob.dev", "ml", true},
           {"patch", "trainingjobs.trainingjob.dev", "ml", true},
           {"delete", "trainingjobs.trainingjob.dev", "ml", true},
           {"update", "trainingjobs.trainingjob.dev/status", "ml", true},
           {"update", "trainingjobs.trainingjob.dev/finalizers", "ml", true},
           {"create", "pods", "ml", true},
           {"patch", "pods", "ml", true},
           {"delete", "services", "ml", true},
           {"create", "secrets", "ml", true},
           {"patch", "secrets", "ml", true},
           {"create", "events", "ml", true},
           {"list", "nodes", "", true},
           {"get", "podgroups.scheduling.volcano.sh", "ml", true},
           {"create", "podgroups.scheduling.volcano.sh", "ml", true},
           {"patch", "podgroups.scheduling.volcano.sh", "ml", true},
           {"update", "leases.coordination.k8s.io", kNamespace, true},
           // ...and nothing more.
           {"create", "trainingjobs.trainingjob.dev", "ml", false},
           {"update", "pods", "ml", false},
           {"update", "secrets", "ml", false},
           {"get", "configmaps", "ml", false},
           {"delete", "nodes", "", false},
           {"update", "leases.coordination.k8s.io", "ml", false},
           {"delete", "leases.coordination.k8s.io", kNamespace, false},
           {"delete", "podgroups.scheduling.volcano.sh", "ml", false},  // the GC's job
           {"update", "podgroups.scheduling.volcano.sh", "ml", false},
           {"list", "podgroups.scheduling.volcano.sh", "ml", false},
           {"create", "podgroups.scheduling.x-k8s.io", "ml", false},
           {"get", "podgroups.scheduling.x-k8s.io", "ml", false},
           {"create", "clusterroles.rbac.authorization.k8s.io", "", false},
       }) {
    EXPECT_EQ(CanI(g.verb, g.resource, g.ns), g.allowed)
        << g.verb << " " << g.resource << " in " << (g.ns.empty() ? "cluster" : g.ns);
  }

  const CommandOutput uninstall =
      HelmCmd(absl::StrCat("uninstall ", kRelease, " --namespace ", kNamespace, " --wait"));
  ASSERT_TRUE(uninstall.ok) << uninstall.output;
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        return !Exists("deployment/" + std::string(kFullname) + ns) &&
               !Exists("serviceaccount/" + std::string(kFullname) + ns) &&
               !Exists("clusterrole/" + std::string(kFullname)) &&
               !Exists("clusterrolebinding/" + std::string(kFullname) + "-nodes") &&
               !Exists("role/" + std::string(kFullname) + "-leader-election" + ns) &&
               !Exists("service/" + std::string(kFullname) + "-metrics" + ns) &&
               !Exists("configmap/" + std::string(kFullname) + "-dashboard" + ns);
      },
      absl::Seconds(60)))
      << Kubectl("get all,sa,cm,role,rolebinding" + ns).output;
  EXPECT_FALSE(CanI("create", "pods", "ml"));
  // helm keeps CRDs on uninstall, by design.
  EXPECT_TRUE(Exists("crd/trainingjobs.trainingjob.dev"));
}

}  // namespace
}  // namespace tj::helm_testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new tj::kube::testing::KubeClusterEnvironment);
  return RUN_ALL_TESTS();
}
