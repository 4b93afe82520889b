// The chart in helm/trainingjob-operator, offline: `helm lint --strict` is clean, `helm template`
// renders exactly the RBAC rules the operator needs (a missing or extra verb fails), the
// Deployment runs tj-operator with the documented flags, probes and a locked-down
// securityContext, the optional objects follow their values, bad values fail the render, and the
// chart's CRD is the one in crds/.
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/helm/helm_support.h"

namespace tj::helm_testing {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

class HelmChartTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string error;
    helm_ = new std::string(HelmBinary(skip_reason_, &error));
    ASSERT_TRUE(error.empty()) << error;
  }
  static void TearDownTestSuite() { delete helm_; }

  void SetUp() override {
    if (!skip_reason_->empty()) GTEST_SKIP() << *skip_reason_;
    ASSERT_FALSE(helm_->empty());
  }

  // `helm template` in namespace tj-system with `--set` flags; objects parsed.
  static std::vector<json> Render(const std::string& sets = "") {
    const CommandOutput out =
        Helm(*helm_, "template tj " + ChartDir() + " --namespace tj-system " + sets);
    EXPECT_TRUE(out.ok) << out.output;
    std::string error;
    std::vector<json> objects = ParseManifests(out.output, &error);
    EXPECT_TRUE(error.empty()) << error;
    return objects;
  }

  static std::string* helm_;
  static std::string* skip_reason_;
};
std::string* HelmChartTest::helm_ = nullptr;
std::string* HelmChartTest::skip_reason_ = new std::string;

// "group/resource verb" for every rule of every Role and ClusterRole, with where it applies:
// "<namespace>|cluster group/resource verb".
std::set<std::string> Grants(const std::vector<json>& objects) {
  std::set<std::string> grants;
  for (const std::string kind : {"ClusterRole", "Role"}) {
    for (const json& role : OfKind(objects, kind)) {
      const std::string scope =
          kind == "ClusterRole" ? "cluster" : role["metadata"].value("namespace", "?");
      for (const json& rule : role["rules"]) {
        for (const json& group : rule["apiGroups"]) {
          for (const json& resource : rule["resources"]) {
            for (const json& verb : rule["verbs"]) {
              const std::string g = group.get<std::string>();
              grants.insert(absl::StrCat(scope, " ", g.empty() ? "core" : g, "/",
                                         resource.get<std::string>(), " ",
                                         verb.get<std::string>()));
            }
          }
        }
      }
    }
  }
  return grants;
}

// What tj-operator needs, in `scope` (a namespace or "cluster").
std::set<std::string> JobGrants(const std::string& scope) {
  std::set<std::string> out;
  auto add = [&](const std::string& resource, std::vector<std::string> verbs) {
    for (const std::string& verb : verbs) out.insert(scope + " " + resource + " " + verb);
  };
  // delete: ttlSecondsAfterFinished deletes the finished job.
  add("trainingjob.dev/trainingjobs", {"get", "list", "watch", "update", "patch", "delete"});
  add("trainingjob.dev/trainingjobs/status", {"get", "update", "patch"});
  add("trainingjob.dev/trainingjobs/finalizers", {"update"});
  add("core/pods", {"get", "list", "watch", "create", "delete", "patch"});
  add("core/services", {"get", "list", "watch", "create", "delete"});
  add("core/secrets", {"get", "list", "watch", "create", "delete", "patch"});
  add("core/events", {"create", "patch"});
  return out;
}

std::set<std::string> CommonGrants(const std::string& lease_namespace) {
  return {"cluster core/nodes get",
          "cluster core/nodes list",
          "cluster core/nodes watch",
          lease_namespace + " coordination.k8s.io/leases get",
          lease_namespace + " coordination.k8s.io/leases create",
          lease_namespace + " coordination.k8s.io/leases update"};
}

std::set<std::string> Union(std::set<std::string> a, const std::set<std::string>& b) {
  a.insert(b.begin(), b.end());
  return a;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_F(HelmChartTest, LintIsCleanForEveryValueCombination) {
  for (const std::string sets :
       {"", "--set gangScheduler=volcano --set serviceMonitor.enabled=true",
        "--set gangScheduler=scheduler-plugins --set watchNamespace=ml --set logFormat=text",
        "--set replicaCount=1 --set leaderElection.enabled=false --set "
        "grafanaDashboard.enabled=false"}) {
    SCOPED_TRACE(sets);
    const CommandOutput lint = Helm(*helm_, "lint --strict " + ChartDir() + " " + sets);
    EXPECT_TRUE(lint.ok) << lint.output;
    EXPECT_THAT(lint.output, HasSubstr("1 chart(s) linted, 0 chart(s) failed"));
    EXPECT_THAT(lint.output, Not(HasSubstr("[WARNING]")));
    EXPECT_THAT(lint.output, Not(HasSubstr("[ERROR]")));
  }
}

TEST_F(HelmChartTest, ChartCrdIsTheSourceCrd) {
  const std::string source =
      ReadFile(std::string(TJ_SOURCE_DIR) + "/crds/trainingjob.dev_trainingjobs.yaml");
  ASSERT_THAT(source, HasSubstr("name: trainingjobs.trainingjob.dev"));
  EXPECT_EQ(ReadFile(ChartDir() + "/crds/trainingjob.dev_trainingjobs.yaml"), source)
      << "helm/trainingjob-operator/crds/ is a copy of crds/: cp crds/*.yaml "
         "helm/trainingjob-operator/crds/";
  // Nothing else in the chart's crds/: helm installs everything there.
  int files = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator(ChartDir() + "/crds")) {
    ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST_F(HelmChartTest, RbacGrantsExactlyWhatTheOperatorNeeds) {
  EXPECT_EQ(Grants(Render()), Union(JobGrants("cluster"), CommonGrants("tj-system")));
}

TEST_F(HelmChartTest, RbacForOneWatchedNamespaceIsARoleThere) {
  const std::vector<json> objects = Render("--set watchNamespace=ml");
  EXPECT_EQ(Grants(objects), Union(JobGrants("ml"), CommonGrants("tj-system")));
  const std::vector<json> bindings = OfKind(objects, "RoleBinding", "tj-trainingjob-operator");
  ASSERT_EQ(bindings.size(), 1u);
  EXPECT_EQ(bindings[0]["metadata"]["namespace"], "ml");
  EXPECT_EQ(bindings[0]["subjects"][0]["namespace"], "tj-system");
}

TEST_F(HelmChartTest, GangSchedulersAddTheirPodGroupsOnly) {
  const std::set<std::string> base = Union(JobGrants("cluster"), CommonGrants("tj-system"));
  auto podgroups = [](const std::string& group) {
    std::set<std::string> out;
    // get, create, and patch back minMember/queue/priorityClassName (Reconciler::EnsurePodGroup);
    // the garbage collector deletes it with the job.
    for (const char* verb : {"get", "create", "patch"}) {
      out.insert("cluster " + group + "/podgroups " + verb);
    }
    return out;
  };
  EXPECT_EQ(Grants(Render("--set gangScheduler=volcano")),
            Union(base, podgroups("scheduling.volcano.sh")));
  EXPECT_EQ(Grants(Render("--set gangScheduler=scheduler-plugins")),
            Union(base, podgroups("scheduling.x-k8s.io")));
}

TEST_F(HelmChartTest, RoleBindingsNameTheChartsServiceAccount) {
  const std::vector<json> objects = Render();
  const std::vector<json> accounts = OfKind(objects, "ServiceAccount");
  ASSERT_EQ(accounts.size(), 1u);
  const std::string sa = accounts[0]["metadata"]["name"];
  int bindings = 0;
  for (const std::string kind : {"ClusterRoleBinding", "RoleBinding"}) {
    for (const json& binding : OfKind(objects, kind)) {
      ++bindings;
      EXPECT_EQ(binding["subjects"], json::parse(R"([{"kind":"ServiceAccount","name":")" + sa +
                                                 R"(","namespace":"tj-system"}])"));
      // Every binding's role is rendered too.
      EXPECT_THAT(OfKind(objects, binding["roleRef"]["kind"], binding["roleRef"]["name"]),
                  Not(IsEmpty()));
    }
  }
  EXPECT_EQ(bindings, 3);  // jobs, nodes, leases
}

TEST_F(HelmChartTest, DeploymentRunsTheOperatorWithTheDocumentedFlags) {
  const std::vector<json> objects = Render();
  const std::vector<json> deployments = OfKind(objects, "Deployment");
  ASSERT_EQ(deployments.size(), 1u);
  const json& deployment = deployments[0];
  EXPECT_EQ(deployment["spec"]["replicas"], 2);
  const json& pod = deployment["spec"]["template"]["spec"];
  EXPECT_EQ(pod["serviceAccountName"], "tj-trainingjob-operator");
  ASSERT_EQ(pod["containers"].size(), 1u);
  const json& c = pod["containers"][0];
  EXPECT_EQ(c["image"], "ghcr.io/trainingjob-dev/tj-operator:0.1.0");
  EXPECT_EQ(c["args"], json::parse(R"([
      "--namespace=", "--leader-elect=true", "--leader-election-namespace=tj-system",
      "--leader-election-id=trainingjob-operator-leader", "--metrics-address=:8080",
      "--health-address=:8081", "--workers=8", "--gang-scheduler=none", "--log-format=json",
      "--terminating-pod-timeout=5m"])"));
  EXPECT_EQ(c["env"], json::parse(R"([
      {"name":"POD_NAME","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}},
      {"name":"POD_NAMESPACE","valueFrom":{"fieldRef":{"fieldPath":"metadata.namespace"}}},
      {"name":"POD_IP","valueFrom":{"fieldRef":{"fieldPath":"status.podIP"}}}])"));
  EXPECT_EQ(c["ports"], json::parse(R"([
      {"name":"metrics","containerPort":8080,"protocol":"TCP"},
      {"name":"health","containerPort":8081,"protocol":"TCP"}])"));
  EXPECT_EQ(c["livenessProbe"]["httpGet"], json::parse(R"({"path":"/healthz","port":"health"})"));
  EXPECT_EQ(c["readinessProbe"]["httpGet"], json::parse(R"({"path":"/readyz","port":"health"})"));
  EXPECT_TRUE(c["resources"]["requests"].contains("cpu"));
  EXPECT_TRUE(c["resources"]["requests"].contains("memory"));
  EXPECT_TRUE(c["resources"]["limits"].contains("memory"));
  EXPECT_EQ(pod["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(pod["securityContext"]["runAsUser"], 65532);
  EXPECT_EQ(c["securityContext"]["readOnlyRootFilesystem"], true);
  EXPECT_EQ(c["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(c["securityContext"]["capabilities"]["drop"], json::parse(R"(["ALL"])"));

  // Values reach the flags.
  const std::vector<json> custom = Render(
      "--set watchNamespace=ml --set leaderElection.namespace=kube-system --set workers=16 "
      "--set gangScheduler=volcano --set logFormat=text --set terminatingPodTimeout=90s "
      "--set image.tag=dev --set metrics.port=9090 --set health.port=9091");
  const json args = OfKind(custom, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(args["image"], "ghcr.io/trainingjob-dev/tj-operator:dev");
  EXPECT_EQ(args["args"], json::parse(R"([
      "--namespace=ml", "--leader-elect=true", "--leader-election-namespace=kube-system",
      "--leader-election-id=trainingjob-operator-leader", "--metrics-address=:9090",
      "--health-address=:9091", "--workers=16", "--gang-scheduler=volcano", "--log-format=text",
      "--terminating-pod-timeout=90s"])"));
  // Listening on the pod's IP (pods sharing one network, as under the test node agent).
  const std::vector<json> on_pod_ip =
      Render("--set 'metrics.host=$(POD_IP)' --set 'health.host=$(POD_IP)'");
  const json pod_ip_args =
      OfKind(on_pod_ip, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["args"];
  EXPECT_THAT(pod_ip_args, ::testing::Contains("--metrics-address=$(POD_IP):8080"));
  EXPECT_THAT(pod_ip_args, ::testing::Contains("--health-address=$(POD_IP):8081"));
  // The Lease Role follows the Lease.
  EXPECT_THAT(Grants(custom), ::testing::Contains("kube-system coordination.k8s.io/leases update"));
}

TEST_F(HelmChartTest, MetricsServiceSelectsTheOperatorPods) {
  const std::vector<json> objects = Render();
  const std::vector<json> services = OfKind(objects, "Service");
  ASSERT_EQ(services.size(), 1u);
  const json deployment = OfKind(objects, "Deployment")[0];
  EXPECT_EQ(services[0]["spec"]["selector"], deployment["spec"]["selector"]["matchLabels"]);
  EXPECT_EQ(services[0]["spec"]["ports"][0]["targetPort"], "metrics");
  EXPECT_THAT(OfKind(objects, "ServiceMonitor"), IsEmpty());  // off by default

  const std::vector<json> monitored = Render("--set serviceMonitor.enabled=true");
  const std::vector<json> monitors = OfKind(monitored, "ServiceMonitor");
  ASSERT_EQ(monitors.size(), 1u);
  EXPECT_EQ(monitors[0]["spec"]["endpoints"][0]["port"], "metrics");
  for (const auto& [key, value] : monitors[0]["spec"]["selector"]["matchLabels"].items()) {
    EXPECT_EQ(OfKind(monitored, "Service")[0]["metadata"]["labels"].value(key, ""), value)
        << "the ServiceMonitor selects label " << key << " which the Service lacks";
  }
}

TEST_F(HelmChartTest, GrafanaDashboardChartsEveryOperatorMetric) {
  const std::vector<json> maps = OfKind(Render(), "ConfigMap");
  ASSERT_EQ(maps.size(), 1u);
  EXPECT_EQ(maps[0]["metadata"]["labels"]["grafana_dashboard"], "1");
  const json dashboard =
      json::parse(maps[0]["data"].value("trainingjob-operator.json", ""), nullptr, false);
  ASSERT_TRUE(dashboard.is_object()) << "the dashboard is not JSON";
  std::string queries;
  for (const json& panel : dashboard["panels"]) {
    for (const json& target : panel["targets"]) queries += target.value("expr", "") + "\n";
  }
  for (const char* metric : {"tj_operator_jobs{", "tj_operator_reconcile_duration_seconds_bucket",
                             "tj_operator_workqueue_depth", "tj_operator_restarts_total",
                             "by (reason)", "tj_operator_preemption_notices_total", "by (result)",
                             "tj_operator_api_errors_total", "by (verb, code)", "by (state)",
                             "tj_operator_api_write_duration_seconds_bucket",
                             "by (le, verb, resource)", "tj_operator_write_queue_depth",
                             "tj_operator_events_dropped_total"}) {
    EXPECT_THAT(queries, HasSubstr(metric));
  }
  EXPECT_THAT(OfKind(Render("--set grafanaDashboard.enabled=false"), "ConfigMap"), IsEmpty());
}

TEST_F(HelmChartTest, BadValuesFailTheRenderNamingTheValue) {
  struct Case {
    std::string sets;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {"--set gangScheduler=kueue", "gangScheduler: \"kueue\" is not one of none, volcano"},
           {"--set logFormat=xml", "logFormat: \"xml\" is not one of json, text"},
           {"--set leaderElection.enabled=false", "replicaCount > 1 requires leaderElection"},
           {"--set serviceMonitor.enabled=true --set metrics.service.enabled=false",
            "serviceMonitor.enabled needs metrics.service.enabled"},
           {"--set serviceAccount.create=false", "serviceAccount.name is required"},
       }) {
    SCOPED_TRACE(c.sets);
    const CommandOutput out =
        Helm(*helm_, "template tj " + ChartDir() + " --namespace tj-system " + c.sets);
    EXPECT_FALSE(out.ok);
    EXPECT_THAT(out.output, HasSubstr(c.message));
  }
}

}  // namespace
}  // namespace tj::helm_testing
