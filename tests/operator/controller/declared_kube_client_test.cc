// DeclaredKubeClient lets through exactly the calls api_permissions.cc declares, and refuses any
// other before it leaves, naming the call and the list; the NetworkPolicy of a job is what the
// operator declares it may make, and EnsureJobNetworkPolicy creates it or accepts only its own.
#include "operator/controller/declared_kube_client.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/controller/api_permissions.h"
#include "operator/controller/network_policy.h"
#include "operator/kube/resource.h"
#include "tests/operator/controller/controller_test_jobs.h"
#include "tests/operator/controller/recording_kube_client.h"

namespace tj::op {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

kube::ResourceRef Ref(const char* resource, const char* name = "", const char* sub = "") {
  kube::ResourceRef ref = *kube::Resource(resource, "ml", name);
  ref.subresource = sub;
  return ref;
}

TEST(DeclaredKubeClientTest, PassesDeclaredCallsAndRefusesOthersBeforeTheyLeave) {
  auto inner = std::make_shared<testing::RecordingKubeClient>();
  DeclaredKubeClient client(inner);
  EXPECT_TRUE(absl::IsNotFound(client.Get(Ref("secrets", "digits-job-token")).status()));
  EXPECT_TRUE(client.Create(Ref("pods"), {{"metadata", {{"name", "p"}}}}).ok());
  EXPECT_TRUE(client.UpdateStatus(Ref("trainingjobs", "digits"), json::object()).ok());
  EXPECT_TRUE(client.MergePatch(Ref("secrets", "digits-job-token"), json::object()).ok());
  EXPECT_TRUE(client.Delete(Ref("trainingjobs", "digits"), {}).ok());
  const size_t passed = inner->calls.size();

  struct Refused {
    absl::StatusOr<json> result;
    const char* names;
  };
  for (const Refused& r : std::vector<Refused>{
           {client.List(Ref("secrets"), {}), "list on secrets,"},
           {client.MergePatch(Ref("pods", "p"), json::object()), "patch on pods,"},
           {client.Update(Ref("trainingjobs", "digits"), json::object()), "update on trainingjobs.trainingjob.dev,"},
           {client.Delete(Ref("secrets", "digits-job-token"), {}), "delete on secrets,"},
           {client.Get(Ref("nodes", "n1")), "get on nodes,"},
           {client.Evict(Ref("pods", "p"), {}), "create on pods/eviction,"},
       }) {
    EXPECT_TRUE(absl::IsPermissionDenied(r.result.status())) << r.names;
    EXPECT_THAT(r.result.status().message(), HasSubstr(r.names));
    EXPECT_THAT(r.result.status().message(), HasSubstr("operator/controller/api_permissions.cc"));
  }
  EXPECT_TRUE(absl::IsPermissionDenied(client.Watch(Ref("secrets"), "", {}, nullptr)));
  EXPECT_EQ(inner->calls.size(), passed) << "a refused call reached the API server";
}

TEST(DeclaredKubeClientTest, EveryDeclaredRuleNamesItsCodeAndKnownVerbs) {
  for (const ApiPermission& p : OperatorApiPermissions()) {
    EXPECT_FALSE(p.why.empty()) << p.resource;
    EXPECT_FALSE(p.verbs.empty()) << p.resource;
    for (std::string_view verb : p.verbs) {
      EXPECT_THAT((std::vector<std::string_view>{"get", "list", "watch", "create", "update",
                                                  "patch", "delete"}),
                  ::testing::Contains(verb))
          << p.resource;
    }
  }
}

TEST(NetworkPolicyTest, SelectsTheJobsPodsAndAdmitsThemAndTheOperator) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml());
  NetworkPolicyOptions options{true, "tj-system", {{"app.kubernetes.io/instance", "tj"}}};
  const json policy = BuildJobNetworkPolicy(job, options);
  EXPECT_EQ(policy["metadata"]["name"], "digits");
  EXPECT_EQ(policy["metadata"]["namespace"], "ml");
  EXPECT_EQ(policy["metadata"]["ownerReferences"][0]["uid"], job.metadata.uid.value_or(""));
  EXPECT_EQ(policy["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(policy["spec"], json::parse(R"({
      "podSelector": {"matchLabels": {"trainingjob.dev/job-name": "digits"}},
      "policyTypes": ["Ingress"],
      "ingress": [
        {"from": [{"podSelector": {"matchLabels": {"trainingjob.dev/job-name": "digits"}}}]},
        {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "tj-system"}},
                   "podSelector": {"matchLabels": {"app.kubernetes.io/instance": "tj"}}}],
         "ports": [{"protocol": "TCP", "port": 2222}]}]})"));
}

TEST(NetworkPolicyTest, CreatedOrFoundOwnedElseRefusedNamingIt) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml());
  NetworkPolicyOptions options{true, "tj-system", {{"app", "op"}}};
  testing::RecordingKubeClient client;
  EXPECT_TRUE(EnsureJobNetworkPolicy(client, job, options).ok());
  EXPECT_TRUE(EnsureJobNetworkPolicy(client, job, options).ok());  // exists, the job's
  EXPECT_THAT(client.calls, ElementsAre("create networkpolicies", "create networkpolicies",
                                        "get networkpolicies digits"));
  client.objects["networkpolicies/ml/digits"]["metadata"]["ownerReferences"] = json::array();
  const absl::Status taken = EnsureJobNetworkPolicy(client, job, options);
  EXPECT_TRUE(absl::IsFailedPrecondition(taken)) << taken;
  EXPECT_THAT(taken.message(), HasSubstr("networkpolicy \"digits\" in namespace \"ml\""));
}

}  // namespace
}  // namespace tj::op
