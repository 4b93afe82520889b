// The chart in helm/trainingjob-operator, offline: `helm lint --strict` is clean, `helm template`
// renders exactly the RBAC rules of operator/controller/api_permissions.cc (a missing or extra
// verb fails) in every mode, the aggregated roles for TrainingJob users, the
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
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "operator/controller/api_permissions.h"
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

// What a role's rules allow, as "<scope> group/resource verb" (scope: a namespace or "cluster").
void AddRules(const json& role, const std::string& scope, std::set<std::string>& grants) {
  for (const json& rule : role["rules"]) {
    for (const json& group : rule["apiGroups"]) {
      for (const json& resource : rule["resources"]) {
        for (const json& verb : rule["verbs"]) {
          const std::string g = group.get<std::string>();
          grants.insert(absl::StrCat(scope, " ", g.empty() ? "core" : g, "/",
                                     resource.get<std::string>(), " ", verb.get<std::string>()));
        }
      }
    }
  }
}

// What the chart lets the operator's ServiceAccount do: the rules of every role bound to it, in
// the scope of the binding. (The aggregated roles for users are bound to nobody by the chart.)
std::set<std::string> Grants(const std::vector<json>& objects) {
  std::set<std::string> grants;
  for (const std::string kind : {"ClusterRoleBinding", "RoleBinding"}) {
    for (const json& binding : OfKind(objects, kind)) {
      const std::string scope =
          kind == "ClusterRoleBinding" ? "cluster" : binding["metadata"].value("namespace", "?");
      const std::string role_kind = binding["roleRef"]["kind"];
      const std::vector<json> roles = OfKind(objects, role_kind, binding["roleRef"]["name"]);
      EXPECT_EQ(roles.size(), 1u) << binding.dump();
      for (const json& role : roles) {
        if (role_kind == "Role") {
          EXPECT_EQ(role["metadata"].value("namespace", ""), scope) << binding.dump();
        }
        AddRules(role, scope, grants);
      }
    }
  }
  return grants;
}

// What tj-operator calls (operator/controller/api_permissions.cc) with these features on, its
// jobs in `jobs_scope` (a namespace or "cluster") and its Lease in `lease_namespace` (empty:
// no leader election).
std::set<std::string> Expected(const std::string& jobs_scope, const std::string& lease_namespace,
                               std::set<op::ApiFeature> features = {}) {
  features.insert(op::ApiFeature::kAlways);
  if (!lease_namespace.empty()) features.insert(op::ApiFeature::kLeaderElection);
  std::set<std::string> out;
  for (const op::ApiPermission& p : op::OperatorApiPermissions()) {
    if (!features.contains(p.feature)) continue;
    const std::string scope = p.scope == op::ApiScope::kJobs      ? jobs_scope
                              : p.scope == op::ApiScope::kCluster ? std::string("cluster")
                                                                  : lease_namespace;
    for (std::string_view verb : p.verbs) {
      out.insert(absl::StrCat(scope, " ", p.group.empty() ? "core" : std::string(p.group), "/",
                              std::string(p.resource), " ", std::string(verb)));
    }
  }
  return out;
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
        "--set podMonitor.enabled=true --set podMonitor.prometheusServiceAccount.name=p "
        "--set podMonitor.prometheusServiceAccount.namespace=monitoring --set watchNamespace=ml",
        "--set podMonitor.enabled=true --set podMonitor.prometheusServiceAccount.name=p "
        "--set podMonitor.prometheusServiceAccount.namespace=monitoring",
        "--set networkPolicy.enabled=true --set aggregateRoles.enabled=false --set "
        "kueue.enabled=true",
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
  const std::set<std::string> grants = Grants(Render());
  EXPECT_EQ(grants, Expected("cluster", "tj-system"));
  // What an earlier chart granted and no code calls; Secrets are read by name, never listed.
  for (const char* never :
       {"cluster core/secrets list", "cluster core/secrets watch", "cluster core/secrets delete",
        "cluster core/pods patch", "cluster trainingjob.dev/trainingjobs update",
        "cluster trainingjob.dev/trainingjobs patch", "cluster core/nodes get"}) {
    EXPECT_FALSE(grants.contains(never)) << never;
  }
  EXPECT_EQ(Grants(Render("--set leaderElection.enabled=false --set replicaCount=1")),
            Expected("cluster", ""));
}

TEST_F(HelmChartTest, RbacForOneWatchedNamespaceIsARoleThere) {
  const std::vector<json> objects = Render("--set watchNamespace=ml");
  EXPECT_EQ(Grants(objects), Expected("ml", "tj-system"));
  const std::vector<json> bindings = OfKind(objects, "RoleBinding", "tj-trainingjob-operator");
  ASSERT_EQ(bindings.size(), 1u);
  EXPECT_EQ(bindings[0]["metadata"]["namespace"], "ml");
  EXPECT_EQ(bindings[0]["subjects"][0]["namespace"], "tj-system");
  EXPECT_THAT(OfKind(objects, "ClusterRole", "tj-trainingjob-operator"), IsEmpty());
  const json deployment = OfKind(objects, "Deployment")[0];
  EXPECT_THAT(deployment["spec"]["template"]["spec"]["containers"][0]["args"],
              ::testing::Contains("--namespace=ml"));
}

TEST_F(HelmChartTest, GangSchedulersAddTheirPodGroupsOnly) {
  EXPECT_EQ(Grants(Render("--set gangScheduler=volcano")),
            Expected("cluster", "tj-system", {op::ApiFeature::kVolcano}));
  EXPECT_EQ(Grants(Render("--set gangScheduler=scheduler-plugins")),
            Expected("cluster", "tj-system", {op::ApiFeature::kSchedulerPlugins}));
}

TEST_F(HelmChartTest, KueueValueAddsItsFlagAndRulesOnly) {
  for (const std::string scope : {"cluster", "ml"}) {
    SCOPED_TRACE(scope);
    const std::string watch = scope == "cluster" ? "" : " --set watchNamespace=ml";
    const std::vector<json> objects = Render("--set kueue.enabled=true" + watch);
    EXPECT_EQ(Grants(objects), Expected(scope, "tj-system", {op::ApiFeature::kKueue}))
        << "workloads and localqueues where the jobs are; flavours and priority classes cluster-wide";
    EXPECT_THAT(OfKind(objects, "Deployment")[0]["spec"]["template"]["spec"]["containers"][0]["args"],
                ::testing::Contains("--kueue=true"));
  }
  EXPECT_EQ(Grants(Render()), Expected("cluster", "tj-system"));
  for (const json& arg : OfKind(Render(), "Deployment")[0]["spec"]["template"]["spec"]
                             ["containers"][0]["args"]) {
    EXPECT_THAT(arg.get<std::string>(), Not(HasSubstr("kueue")));
  }
}

TEST_F(HelmChartTest, NetworkPolicyValueAddsItsFlagsAndRuleOnly) {
  const std::vector<json> objects = Render("--set networkPolicy.enabled=true --set watchNamespace=ml");
  EXPECT_EQ(Grants(objects), Expected("ml", "tj-system", {op::ApiFeature::kNetworkPolicy}));
  const json pod = OfKind(objects, "Deployment")[0]["spec"]["template"];
  const json args = pod["spec"]["containers"][0]["args"];
  EXPECT_THAT(args, ::testing::Contains("--job-network-policy=true"));
  // The labels the job policies admit are the operator pods' own.
  const std::string flag = "--operator-pod-labels=";
  json admitted = json::object();
  for (const json& arg : args) {
    const std::string a = arg.get<std::string>();
    if (!a.starts_with(flag)) continue;
    for (const absl::string_view pair : absl::StrSplit(a.substr(flag.size()), ',')) {
      const size_t eq = pair.find('=');
      admitted[std::string(pair.substr(0, eq))] = std::string(pair.substr(eq + 1));
    }
  }
  EXPECT_EQ(admitted, pod["metadata"]["labels"]);
  for (const json& arg : OfKind(Render(), "Deployment")[0]["spec"]["template"]["spec"]
                             ["containers"][0]["args"]) {
    EXPECT_THAT(arg.get<std::string>(), Not(HasSubstr("network-policy")));
  }
}

TEST_F(HelmChartTest, AggregatedRolesLetNamespaceUsersUseTrainingJobs) {
  const std::vector<json> objects = Render();
  const std::vector<json> view = OfKind(objects, "ClusterRole", "tj-trainingjob-operator-view");
  const std::vector<json> edit = OfKind(objects, "ClusterRole", "tj-trainingjob-operator-edit");
  ASSERT_EQ(view.size(), 1u);
  ASSERT_EQ(edit.size(), 1u);
  EXPECT_EQ(view[0]["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"], "true");
  EXPECT_EQ(edit[0]["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"], "true");
  EXPECT_EQ(edit[0]["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"], "true");
  std::set<std::string> viewing, editing;
  AddRules(view[0], "ns", viewing);
  AddRules(edit[0], "ns", editing);
  EXPECT_EQ(viewing, (std::set<std::string>{
                         "ns trainingjob.dev/trainingjobs get", "ns trainingjob.dev/trainingjobs list",
                         "ns trainingjob.dev/trainingjobs watch",
                         "ns trainingjob.dev/trainingjobs/status get",
                         "ns trainingjob.dev/trainingjobs/status list",
                         "ns trainingjob.dev/trainingjobs/status watch"}));
  EXPECT_EQ(editing, (std::set<std::string>{
                         "ns trainingjob.dev/trainingjobs create",
                         "ns trainingjob.dev/trainingjobs update",
                         "ns trainingjob.dev/trainingjobs patch",
                         "ns trainingjob.dev/trainingjobs delete",
                         "ns trainingjob.dev/trainingjobs deletecollection"}));
  const std::vector<json> off = Render("--set aggregateRoles.enabled=false");
  EXPECT_THAT(OfKind(off, "ClusterRole", "tj-trainingjob-operator-view"), IsEmpty());
  EXPECT_THAT(OfKind(off, "ClusterRole", "tj-trainingjob-operator-edit"), IsEmpty());
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

// The jobs dashboard ships beside the operator's; its queries select the labels the PodMonitor
// gives the job pods' series (tj_dashboards_prometheus_test runs them against a real scrape).
TEST_F(HelmChartTest, JobsDashboardShipsBesideTheOperatorsAndPicksAJob) {
  const std::vector<json> maps = OfKind(Render(), "ConfigMap");
  ASSERT_EQ(maps.size(), 1u);
  const json dashboard =
      json::parse(maps[0]["data"].value("trainingjob-jobs.json", ""), nullptr, false);
  ASSERT_TRUE(dashboard.is_object()) << "the jobs dashboard is not JSON";
  EXPECT_NE(dashboard["uid"], "trainingjob-operator") << "two dashboards, two uids";
  std::set<std::string> variables;
  for (const json& variable : dashboard["templating"]["list"]) variables.insert(variable["name"]);
  EXPECT_THAT(variables, ::testing::IsSupersetOf({"datasource", "namespace", "trainingjob"}));
  std::string queries;
  for (const json& panel : dashboard["panels"]) {
    for (const json& target : panel["targets"]) queries += target.value("expr", "") + "\n";
  }
  for (const char* metric :
       {"tj_training_step", "tj_training_loss", "tj_eval_metric", "tj_checkpoint_age_seconds",
        "tj_coordinator_preemption_notices_total", "tj_goodput_ratio", "tj_goodput_lost_seconds",
        "tj_ps_pulled_bytes_total", "tj_ps_memory_bytes", "tj_worker_closures_run_total",
        "tj_trainingjob_restarts", "tj_trainingjob_goodput_lost_seconds"}) {
    EXPECT_THAT(queries, HasSubstr(metric));
  }
}

TEST_F(HelmChartTest, PodMonitorIsOptInAndLabelsTheJobPodsForTheJobsDashboard) {
  EXPECT_THAT(OfKind(Render(), "PodMonitor"), IsEmpty());
  const std::vector<json> objects = Render("--set podMonitor.enabled=true");
  const std::vector<json> monitors = OfKind(objects, "PodMonitor");
  ASSERT_EQ(monitors.size(), 1u);
  const json& spec = monitors[0]["spec"];
  // Every pod the operator makes for a job carries the job-name label (api/v1alpha1/labels.h).
  EXPECT_EQ(spec["selector"]["matchExpressions"][0],
            json::parse(R"({"key":"trainingjob.dev/job-name","operator":"Exists"})"));
  EXPECT_EQ(spec["namespaceSelector"], json::parse(R"({"any":true})"));
  const json& endpoint = spec["podMetricsEndpoints"][0];
  EXPECT_EQ(endpoint["port"], "metrics");
  std::set<std::string> target_labels;
  for (const json& relabel : endpoint["relabelings"]) target_labels.insert(relabel["targetLabel"]);
  EXPECT_EQ(target_labels, (std::set<std::string>{"trainingjob", "replica_type", "replica_index"}));
  EXPECT_THAT(OfKind(objects, "ClusterRole", "tj-trainingjob-operator-job-pods-scrape"), IsEmpty())
      << "no RBAC for Prometheus unless its ServiceAccount is named";

  // One watched namespace: only its pods, and Prometheus may list them there only.
  const std::vector<json> scoped = Render(
      "--set podMonitor.enabled=true --set watchNamespace=ml "
      "--set podMonitor.prometheusServiceAccount.name=prometheus "
      "--set podMonitor.prometheusServiceAccount.namespace=monitoring");
  EXPECT_EQ(OfKind(scoped, "PodMonitor")[0]["spec"]["namespaceSelector"],
            json::parse(R"({"matchNames":["ml"]})"));
  const std::vector<json> roles = OfKind(scoped, "Role", "tj-trainingjob-operator-job-pods-scrape");
  ASSERT_EQ(roles.size(), 1u);
  EXPECT_EQ(roles[0]["metadata"]["namespace"], "ml");
  std::set<std::string> grants;
  AddRules(roles[0], "ml", grants);
  EXPECT_EQ(grants,
            (std::set<std::string>{"ml core/pods get", "ml core/pods list", "ml core/pods watch"}));
  const std::vector<json> bindings =
      OfKind(scoped, "RoleBinding", "tj-trainingjob-operator-job-pods-scrape");
  ASSERT_EQ(bindings.size(), 1u);
  EXPECT_EQ(bindings[0]["subjects"][0], json::parse(R"({"kind":"ServiceAccount",
      "name":"prometheus","namespace":"monitoring"})"));
  // Every namespace: a ClusterRole and its binding.
  const std::vector<json> cluster = Render(
      "--set podMonitor.enabled=true --set podMonitor.prometheusServiceAccount.name=p "
      "--set podMonitor.prometheusServiceAccount.namespace=monitoring");
  EXPECT_EQ(OfKind(cluster, "ClusterRoleBinding", "tj-trainingjob-operator-job-pods-scrape").size(),
            1u);
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
           {"--set podMonitor.enabled=true --set podMonitor.port=", "podMonitor.port"},
           {"--set podMonitor.enabled=true --set podMonitor.prometheusServiceAccount.name=p",
            "podMonitor.prometheusServiceAccount.namespace is required"},
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
