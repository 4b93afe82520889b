// Least privilege, with tj-operator as a process on the real API server: installed for one
// namespace (the chart's Role, --namespace) with a NetworkPolicy per job, under the chart's
// ServiceAccount, the namespace enforcing Pod Security "restricted". A job in another namespace
// is ignored; the job's NetworkPolicy selects its pods,
// admits them and the operator's pods on the trainer port, and is owned by the job (there is no
// CNI here to enforce it: the object is what is checked); the job's Secret is read by name. Then
// the API server's audit log of that ServiceAccount is compared with the operator's declared calls
// (operator/controller/api_permissions.cc), both ways: no call outside the list, no refusal, and
// every declared verb used by the scenario (the few it cannot reach are named, with where they are
// tested).
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/controller/api_permissions.h"
#include "tests/operator/controller/operator_process_fixture.h"
#include "tests/support/wait_for.h"

namespace tj::op {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr char kScoped[] = "op-scoped";
constexpr char kUnwatched[] = "op-unwatched";
constexpr char kRelease[] = "scoped";
constexpr char kServiceAccount[] = "scoped-trainingjob-operator";

// One request of the audit log: what RBAC checks, where, and the answer.
struct AuditedCall {
  std::string verb, group, resource, subresource, namespace_name;
  int code = 0;
  std::string Describe() const {
    return absl::StrCat(verb, " ", group.empty() ? "core" : group, "/", resource,
                        subresource.empty() ? "" : "/", subresource, " in ",
                        namespace_name.empty() ? "(cluster)" : namespace_name, " -> ", code);
  }
};

// The completed requests of `user` in the API server's audit log (tests/kube-test-cluster/up.sh).
std::vector<AuditedCall> AuditedCallsOf(const std::string& user) {
  std::vector<AuditedCall> calls;
  std::ifstream in(KubeClusterEnvironment::workdir() + "/logs/audit.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    const json event = json::parse(line, nullptr, false);
    if (!event.is_object() || event.value("stage", "") != "ResponseComplete") continue;
    if (!event.contains("user") || event["user"].value("username", "") != user) continue;
    // The test's own `kubectl auth whoami` with the operator's kubeconfig.
    if (event.value("userAgent", "").starts_with("kubectl")) continue;
    if (!event.contains("objectRef")) continue;  // a non-resource URL (/version, /api)
    const json& ref = event["objectRef"];
    AuditedCall call;
    call.verb = event.value("verb", "");
    call.group = ref.value("apiGroup", "");
    call.resource = ref.value("resource", "");
    call.subresource = ref.value("subresource", "");
    call.namespace_name = ref.value("namespace", "");
    if (event.contains("responseStatus")) call.code = event["responseStatus"].value("code", 0);
    calls.push_back(std::move(call));
  }
  return calls;
}

// Job "digits" (1 coordinator, 1 PS, 2 workers) whose pods satisfy Pod Security "restricted", as
// the runtime image allows (non-root 65532, no capabilities); deleted once finished.
json RestrictedJob() {
  const json container = {
      {"name", "trainer"},
      {"image", "trainingjob/tj-runtime:dev"},
      {"command", {"tj-train"}},
      {"securityContext",
       {{"allowPrivilegeEscalation", false}, {"capabilities", {{"drop", {"ALL"}}}}}}};
  const json pod_security = {{"runAsNonRoot", true},
                             {"runAsUser", 65532},
                             {"seccompProfile", {{"type", "RuntimeDefault"}}}};
  const json replica = {{"template",
                         {{"spec", {{"securityContext", pod_security},
                                    {"containers", json::array({container})}}}}}};
  json worker = replica;
  worker["replicas"] = 2;
  return {{"apiVersion", "trainingjob.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", "digits"}}},
          {"spec",
           {{"runPolicy", {{"ttlSecondsAfterFinished", 0}}},
            {"replicaSpecs", {{"Coordinator", replica}, {"PS", replica}, {"Worker", worker}}},
            // A claim the operator makes (persistentvolumeclaims get, create), fsGroup and all
            // passing "restricted".
            {"checkpoint",
             {{"dir", "/checkpoints"},
              {"volume",
               {{"claimTemplate", {{"resources", {{"requests", {{"storage", "1Gi"}}}}}}},
                {"reclaimPolicy", "Delete"}}}}}}}};
}

class OperatorRbacTest : public OperatorProcessTest {
 protected:
  json Get(const std::string& what, const std::string& ns) {
    bool ok = false;
    const std::string out = Kubectl(absl::StrCat("-n ", ns, " get ", what, " -o json"), &ok);
    return ok ? json::parse(out, nullptr, false) : json();
  }
  size_t PodCount(const std::string& ns) {
    auto list = admin_->List(*kube::Resource("pods", ns), {});
    return list.ok() ? (*list)["items"].size() : 0;
  }
};

TEST_F(OperatorRbacTest, NamespacedInstallIgnoresOtherNamespacesAndUsesOnlyDeclaredCalls) {
  for (const char* ns : {kScoped, kUnwatched}) {
    bool ok = false;
    const std::string out = Kubectl(absl::StrCat("create namespace ", ns), &ok);
    ASSERT_TRUE(ok || absl::StrContains(out, "AlreadyExists")) << out;
  }
  const std::string kubeconfig = InstallChartRbac(
      kRelease, absl::StrCat("--set watchNamespace=", kScoped, " --set networkPolicy.enabled=true"));
  ASSERT_FALSE(kubeconfig.empty());
  // A Secret carrying the job-name label that the operator did not make: never read.
  bool ok = false;
  std::string out = Kubectl(absl::StrCat("-n ", kScoped,
                                         " create secret generic tenant-secret "
                                         "--from-literal=password=hunter2"),
                            &ok);
  ASSERT_TRUE(ok) << out;
  out = Kubectl(absl::StrCat("-n ", kScoped, " label secret tenant-secret ",
                             "trainingjob.dev/job-name=digits"),
                &ok);
  ASSERT_TRUE(ok) << out;

  // The watched namespace enforces Pod Security "restricted": the pods the operator makes from
  // a template that asks for it pass the API server's admission.
  out = Kubectl(absl::StrCat("label namespace ", kScoped,
                             " pod-security.kubernetes.io/enforce=restricted --overwrite"),
                &ok);
  ASSERT_TRUE(ok) << out;
  // The job: deleted by the operator once finished (ttlSecondsAfterFinished: 0).
  const std::string job_file = workdir_ + "/scoped-job.json";
  std::ofstream(job_file) << RestrictedJob().dump();
  for (const char* ns : {kScoped, kUnwatched}) {
    out = Kubectl(absl::StrCat("-n ", ns, " apply -f ", Quote(job_file)), &ok);
    ASSERT_TRUE(ok) << out;
  }
  const std::vector<std::string> flags = {
      absl::StrCat("--namespace=", kScoped), "--job-network-policy=true",
      absl::StrCat("--operator-pod-labels=app.kubernetes.io/name=trainingjob-operator,",
                   "app.kubernetes.io/instance=", kRelease)};
  const std::map<std::string, std::string> env = {{"POD_NAMESPACE", kOperatorNamespace}};
  a_ = StartOperator("op-scoped-a", kubeconfig, workdir_, "tj-operator-scoped-it", flags, env);
  ASSERT_TRUE(testing::WaitFor([&] { return PodCount(kScoped) == 4; }))
      << "pods: " << PodCount(kScoped) << "\n"
      << ReadFile(a_.log);

  // The job's NetworkPolicy: its pods, admitting its pods and the operator's on the trainer port.
  const json job = Get("tj digits", kScoped);
  const json policy = Get("networkpolicy digits", kScoped);
  ASSERT_TRUE(policy.is_object()) << "no NetworkPolicy for the job";
  const json job_pods = {{"matchLabels", {{"trainingjob.dev/job-name", "digits"}}}};
  EXPECT_EQ(policy["spec"]["podSelector"], job_pods);
  EXPECT_EQ(policy["spec"]["policyTypes"], json::array({"Ingress"}));
  EXPECT_EQ(policy["spec"]["ingress"], json::parse(R"([
      {"from": [{"podSelector": {"matchLabels": {"trainingjob.dev/job-name": "digits"}}}]},
      {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "tj-system"}},
                 "podSelector": {"matchLabels": {"app.kubernetes.io/instance": "scoped",
                                                 "app.kubernetes.io/name": "trainingjob-operator"}}}],
       "ports": [{"port": 2222, "protocol": "TCP"}]}])"));
  ASSERT_EQ(policy["metadata"]["ownerReferences"].size(), 1u);
  EXPECT_EQ(policy["metadata"]["ownerReferences"][0]["uid"], job["metadata"]["uid"]);
  EXPECT_EQ(policy["metadata"]["ownerReferences"][0]["controller"], true);
  // Every pod of the job is selected by it.
  auto pods = admin_->List(*kube::Resource("pods", kScoped), {});
  ASSERT_TRUE(pods.ok()) << pods.status();
  for (const json& pod : (*pods)["items"]) {
    EXPECT_EQ(pod["metadata"]["labels"].value("trainingjob.dev/job-name", ""), "digits");
  }

  // The job's checkpoint claim, owned by it (reclaimPolicy Delete).
  const json claim = Get("pvc digits-checkpoint", kScoped);
  ASSERT_TRUE(claim.is_object()) << "no checkpoint claim for the job";
  EXPECT_EQ(claim["metadata"]["ownerReferences"][0]["uid"], job["metadata"]["uid"]);

  // A job whose checkpoint bucket's credentials Secret does not exist: the operator reads the
  // Secret by name under the chart's Role (secrets get, nothing more) and holds the job.
  json held = RestrictedJob();
  held["metadata"]["name"] = "held-s3";
  held["spec"]["checkpoint"] = {
      {"dir", "s3://tj-ckpt/held-s3"},
      {"s3",
       {{"endpoint", "http://127.0.0.1:9"}, {"credentialsSecret", {{"name", "no-such-secret"}}}}}};
  const std::string held_file = workdir_ + "/held-s3.json";
  std::ofstream(held_file) << held.dump();
  out = Kubectl(absl::StrCat("-n ", kScoped, " apply -f ", Quote(held_file)), &ok);
  ASSERT_TRUE(ok) << out;
  EXPECT_TRUE(testing::WaitFor([&] {
    const json job = Get("tj held-s3", kScoped);
    if (!job.is_object() || !job.contains("status")) return false;
    for (const json& c : job["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "Created" &&
          c.value("reason", "") == "CheckpointStorageUnavailable" &&
          absl::StrContains(c.value("message", ""),
                            absl::StrCat("Secret ", kScoped, "/no-such-secret"))) {
        return true;
      }
    }
    return false;
  })) << Get("tj held-s3", kScoped).dump() << "\n" << ReadFile(a_.log);
  kube::ListOptions held_selector;
  held_selector.label_selector = "trainingjob.dev/job-name=held-s3";
  auto held_pods = admin_->List(*kube::Resource("pods", kScoped), held_selector);
  ASSERT_TRUE(held_pods.ok()) << held_pods.status();
  EXPECT_TRUE((*held_pods)["items"].empty()) << "a held job has no pod";

  // The other namespace is not watched: its job has no pods and no status.
  EXPECT_EQ(PodCount(kUnwatched), 0u);
  EXPECT_FALSE(Get("tj digits", kUnwatched).contains("status"));

  // A Secret made before role credentials (only the job's secret): a new operator process reads
  // it by name and completes it. The new process also finds the job's NetworkPolicy existing.
  EXPECT_EQ(StopOperator(a_), 0);
  out = Kubectl(absl::StrCat("-n ", kScoped,
                             " patch secret digits-job-token --type=json -p "
                             "'[{\"op\":\"remove\",\"path\":\"/data/verifiers\"}]'"),
                &ok);
  ASSERT_TRUE(ok) << out;
  b_ = StartOperator("op-scoped-b", kubeconfig, workdir_, "tj-operator-scoped-it", flags, env);
  EXPECT_TRUE(testing::WaitFor([&] {
    const json secret = Get("secret digits-job-token", kScoped);
    return secret.is_object() && secret["data"].contains("verifiers");
  })) << ReadFile(b_.log);

  // Scale-down (a worker's pod and Service deleted), then the end (the job deleted by its TTL).
  out = Kubectl(absl::StrCat("-n ", kScoped, " scale tj digits --replicas=1"), &ok);
  ASSERT_TRUE(ok) << out;
  ASSERT_TRUE(testing::WaitFor([&] { return PodCount(kScoped) == 3; })) << PodCount(kScoped);
  kube::ResourceRef coordinator = *kube::Resource("pods", kScoped, "digits-coordinator-0");
  coordinator.subresource = "status";
  auto patched = admin_->MergePatch(coordinator, {{"status", kubelet::ExitedPodStatus(0)}});
  ASSERT_TRUE(patched.ok()) << patched.status();
  ASSERT_TRUE(testing::WaitFor([&] { return !Get("tj digits", kScoped).is_object(); }))
      << "the finished job was not deleted (ttlSecondsAfterFinished: 0)";
  EXPECT_EQ(PodCount(kUnwatched), 0u);
  EXPECT_EQ(StopOperator(b_), 0);

  // The audit log of the operator's ServiceAccount, against its declared calls.
  const std::vector<AuditedCall> calls =
      AuditedCallsOf(absl::StrCat("system:serviceaccount:", kOperatorNamespace, ":",
                                  kServiceAccount));
  ASSERT_FALSE(calls.empty()) << "nothing audited for " << kServiceAccount;
  std::vector<std::string> undeclared, refused, elsewhere;
  std::set<std::string> used;
  for (const AuditedCall& call : calls) {
    const ApiPermission* rule =
        FindApiPermission(call.verb, call.group, call.resource, call.subresource);
    if (rule == nullptr) undeclared.push_back(call.Describe());
    if (call.code == 401 || call.code == 403) refused.push_back(call.Describe());
    // Namespaced calls only in the watched namespace (and the Lease's); cluster-wide only nodes.
    const bool in_place = call.namespace_name == kScoped ||
                          (call.resource == "leases" && call.namespace_name == kOperatorNamespace) ||
                          (call.resource == "nodes" && call.namespace_name.empty());
    if (!in_place) elsewhere.push_back(call.Describe());
    if (rule != nullptr) {
      used.insert(
          absl::StrCat(std::string(rule->group), "/", std::string(rule->resource), " ", call.verb));
    }
  }
  EXPECT_THAT(undeclared, IsEmpty()) << "calls api_permissions.cc does not declare";
  EXPECT_THAT(refused, IsEmpty()) << "calls the chart's Role did not allow";
  EXPECT_THAT(elsewhere, IsEmpty()) << "calls outside the watched namespace";
  // Every declared call of this configuration was made, but for these (tested elsewhere).
  const std::set<std::string> not_reached = {
      // A repeated Event's count: tests/operator/kube/event_recorder_test.cc.
      "/events patch",
  };
  std::vector<std::string> unused;
  for (const ApiPermission& p : OperatorApiPermissions()) {
    if (!p.called || (p.feature != ApiFeature::kAlways && p.feature != ApiFeature::kLeaderElection &&
                      p.feature != ApiFeature::kNetworkPolicy)) {
      continue;
    }
    for (std::string_view verb : p.verbs) {
      const std::string key = absl::StrCat(std::string(p.group), "/", std::string(p.resource),
                                           " ", std::string(verb));
      if (!used.contains(key) && !not_reached.contains(key)) unused.push_back(key);
    }
  }
  EXPECT_THAT(unused, IsEmpty()) << "declared (and granted by the chart) but never called";
}

}  // namespace
}  // namespace tj::op
