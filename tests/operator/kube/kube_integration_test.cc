// Integration tests of the client against a real kube-apiserver (tests/kube-test-cluster/):
// client-certificate and token auth, CRUD, paging, conflicts, patches, preconditions, a CRD's
// status subresource, watch, RBAC denial.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/kube/api_error.h"
#include "operator/kube/cpprest_transport.h"
#include "operator/kube/kube_client_impl.h"
#include "operator/kube/kube_config.h"
#include "tests/operator/kube/kube_cluster_env.h"

namespace tj::kube {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::KubeClusterEnvironment;

std::unique_ptr<KubeClient> ClientFor(const KubeConfig& config) {
  auto transport = CppRestTransport::Create(config);
  EXPECT_TRUE(transport.ok()) << transport.status();
  if (!transport.ok()) return nullptr;
  return std::make_unique<KubeClientImpl>(std::shared_ptr<HttpTransport>(std::move(*transport)));
}

class KubeIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!KubeClusterEnvironment::skip_reason().empty()) {
      GTEST_SKIP() << KubeClusterEnvironment::skip_reason();
    }
    auto config = LoadKubeConfigFiles({KubeClusterEnvironment::kubeconfig()});
    ASSERT_TRUE(config.ok()) << config.status();
    admin_config_ = *config;
    client_ = ClientFor(admin_config_);
    ASSERT_NE(client_, nullptr);
    // One namespace per test keeps tests independent.
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    ns_ = "it-" + name;
    auto created = client_->Create(*Resource("namespaces"), json{{"metadata", {{"name", ns_}}}});
    ASSERT_TRUE(created.ok() || created.status().code() == absl::StatusCode::kAlreadyExists)
        << created.status();
  }

  ResourceRef Cm(std::string name = "") { return *Resource("configmaps", ns_, std::move(name)); }

  json CmObject(const std::string& name, json data = json::object()) {
    return json{{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata", {{"name", name}, {"labels", {{"it", "yes"}}}}},
                {"data", data}};
  }

  KubeConfig admin_config_;
  std::unique_ptr<KubeClient> client_;
  std::string ns_;
};

TEST_F(KubeIntegrationTest, ClientCertificateCreateGetListWithPaging) {
  EXPECT_FALSE(admin_config_.client_cert_pem.empty());  // the admin kubeconfig uses a cert
  for (int i = 0; i < 25; ++i) {
    auto created =
        client_->Create(Cm(), CmObject(absl::StrCat("cm-", i), {{"i", std::to_string(i)}}));
    ASSERT_TRUE(created.ok()) << created.status();
    EXPECT_EQ((*created)["metadata"]["namespace"], ns_);
  }
  auto got = client_->Get(Cm("cm-7"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)["data"]["i"], "7");

  ListOptions options;
  options.limit = 10;
  options.label_selector = "it=yes";
  auto page = client_->List(Cm(), options);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ((*page)["items"].size(), 10u);
  EXPECT_FALSE((*page)["metadata"].value("continue", "").empty());

  auto all = ListAll(*client_, Cm(), options);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ((*all)["items"].size(), 25u);
  EXPECT_FALSE((*all)["metadata"].value("resourceVersion", "").empty());

  auto again = client_->Create(Cm(), CmObject("cm-3"));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists) << again.status();
  auto missing = client_->Get(Cm("nope"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("get configmaps \"nope\""));
}

TEST_F(KubeIntegrationTest, UpdateWithStaleResourceVersionIsAborted) {
  auto created = client_->Create(Cm(), CmObject("c", {{"v", "1"}}));
  ASSERT_TRUE(created.ok()) << created.status();
  json first = *created;
  first["data"]["v"] = "2";
  first["x-unknown-top-level"] = "kept by us, dropped by the server";
  auto updated = client_->Update(Cm("c"), first);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ((*updated)["data"]["v"], "2");
  json stale = *created;  // resourceVersion of the first write
  stale["data"]["v"] = "3";
  auto conflict = client_->Update(Cm("c"), stale);
  EXPECT_EQ(conflict.status().code(), absl::StatusCode::kAborted) << conflict.status();
  EXPECT_TRUE(IsConflict(conflict.status()));
  EXPECT_THAT(std::string(conflict.status().message()), HasSubstr("update configmaps \"c\""));
}

TEST_F(KubeIntegrationTest, MergePatchAndJsonPatch) {
  ASSERT_TRUE(client_->Create(Cm(), CmObject("p", {{"a", "1"}, {"b", "2"}})).ok());
  auto merged = client_->MergePatch(Cm("p"), json{{"data", {{"a", nullptr}, {"c", "3"}}}});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_FALSE((*merged)["data"].contains("a"));
  EXPECT_EQ((*merged)["data"]["c"], "3");
  auto patched = client_->JsonPatch(
      Cm("p"), json::array({{{"op", "test"}, {"path", "/data/b"}, {"value", "2"}},
                            {{"op", "replace"}, {"path", "/data/b"}, {"value", "20"}}}));
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["data"]["b"], "20");
  auto failed = client_->JsonPatch(
      Cm("p"), json::array({{{"op", "test"}, {"path", "/data/b"}, {"value", "nope"}}}));
  EXPECT_FALSE(failed.ok());
  auto invalid = client_->Create(Cm(), CmObject("Not_A_Valid_Name"));
  EXPECT_EQ(invalid.status().code(), absl::StatusCode::kInvalidArgument) << invalid.status();
  EXPECT_THAT(std::string(invalid.status().message()), HasSubstr("field metadata.name"));
}

TEST_F(KubeIntegrationTest, DeleteWithPreconditions) {
  auto created = client_->Create(Cm(), CmObject("d"));
  ASSERT_TRUE(created.ok()) << created.status();
  DeleteOptions wrong;
  wrong.precondition_uid = "00000000-0000-0000-0000-000000000000";
  auto refused = client_->Delete(Cm("d"), wrong);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kAborted) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("recondition"));
  DeleteOptions stale_rv;
  stale_rv.precondition_resource_version = "1";
  EXPECT_EQ(client_->Delete(Cm("d"), stale_rv).status().code(), absl::StatusCode::kAborted);

  DeleteOptions right;
  right.precondition_uid = (*created)["metadata"]["uid"].get<std::string>();
  right.precondition_resource_version =
      (*created)["metadata"]["resourceVersion"].get<std::string>();
  right.propagation_policy = "Foreground";
  auto deleted = client_->Delete(Cm("d"), right);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  // Foreground: the garbage collector (kube-controller-manager) removes it a moment later.
  absl::StatusCode code = absl::StatusCode::kOk;
  for (absl::Time deadline = absl::Now() + absl::Seconds(60); absl::Now() < deadline;
       absl::SleepFor(absl::Milliseconds(100))) {
    code = client_->Get(Cm("d")).status().code();
    if (code != absl::StatusCode::kOk) break;
  }
  EXPECT_EQ(code, absl::StatusCode::kNotFound);
}

TEST_F(KubeIntegrationTest, CustomResourceStatusSubresource) {
  const json crd = json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.it.example.com"},
    "spec": {"group": "it.example.com", "scope": "Namespaced",
      "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
      "versions": [{"name": "v1", "served": true, "storage": true,
        "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
          "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
          "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}}}]}})");
  auto crds = *Resource("customresourcedefinitions");
  auto made = client_->Create(crds, crd);
  ASSERT_TRUE(made.ok() || made.status().code() == absl::StatusCode::kAlreadyExists)
      << made.status();
  ResourceRef widgets{"it.example.com", "v1", "widgets", ns_, "", ""};
  const json widget = {{"apiVersion", "it.example.com/v1"},
                       {"kind", "Widget"},
                       {"metadata", {{"name", "w"}}},
                       {"spec", {{"size", 3}}}};
  // The CRD is served a moment after it is Established.
  absl::StatusOr<json> created = absl::NotFoundError("not tried");
  for (absl::Time deadline = absl::Now() + absl::Seconds(60); absl::Now() < deadline;
       absl::SleepFor(absl::Milliseconds(200))) {
    created = client_->Create(widgets, widget);
    if (created.status().code() != absl::StatusCode::kNotFound) break;
  }
  ASSERT_TRUE(created.ok()) << created.status();

  json with_status = *created;
  with_status["status"] = {{"phase", "Running"}};
  with_status["spec"]["size"] = 99;  // ignored by the status subresource
  ResourceRef w = widgets;
  w.name = "w";
  auto updated = client_->UpdateStatus(w, with_status);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ((*updated)["status"]["phase"], "Running");
  EXPECT_EQ((*updated)["spec"]["size"], 3);

  ResourceRef status = w;
  status.subresource = "status";
  auto patched = client_->MergePatch(status, json{{"status", {{"phase", "Done"}}}});
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["status"]["phase"], "Done");
  auto stale = client_->UpdateStatus(w, with_status);  // resourceVersion now old
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kAborted) << stale.status();
}

TEST_F(KubeIntegrationTest, WatchSeesAddedModifiedDeleted) {
  auto list = client_->List(Cm(), {});
  ASSERT_TRUE(list.ok()) << list.status();
  const std::string rv = (*list)["metadata"]["resourceVersion"];
  std::vector<std::string> seen;
  std::atomic<bool> done{false};
  absl::Status watch_status;
  WatchOptions options;
  options.allow_watch_bookmarks = true;
  options.timeout_seconds = 60;
  options.cancel = std::make_shared<Cancellation>();
  // The controller-manager publishes kube-root-ca.crt into new namespaces: not ours.
  options.label_selector = "it=yes";
  std::thread watcher([&] {
    watch_status = client_->Watch(Cm(), rv, options, [&](const WatchEvent& e) {
      if (e.type == "BOOKMARK") return true;
      seen.push_back(e.type + ":" + e.object["metadata"]["name"].get<std::string>());
      return e.type != "DELETED";
    });
    done = true;
  });
  ASSERT_TRUE(client_->Create(Cm(), CmObject("w", {{"v", "1"}})).ok());
  ASSERT_TRUE(client_->MergePatch(Cm("w"), json{{"data", {{"v", "2"}}}}).ok());
  ASSERT_TRUE(client_->Delete(Cm("w"), {}).ok());
  // Safety net: never hang the suite if an event is missed.
  std::thread guard([&] {
    for (int i = 0; i < 300; ++i) {
      if (done) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    options.cancel->Cancel();
  });
  watcher.join();
  guard.join();
  EXPECT_TRUE(watch_status.ok()) << watch_status;
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED:w", "MODIFIED:w", "DELETED:w"}));
}

// cpprestsdk's client timeout must act as a read-idle timeout: a watch that keeps receiving
// events lives past it, and one that goes quiet ends with DeadlineExceeded.
TEST_F(KubeIntegrationTest, ReadIdleTimeoutOnlyFiresWhenTheStreamGoesQuiet) {
  WatchOptions options;
  options.read_idle_timeout = absl::Seconds(2);
  options.label_selector = "it=yes";
  std::atomic<int> events{0};
  std::atomic<bool> done{false};
  absl::Status status;
  absl::Time ended;
  std::thread watcher([&] {
    status = client_->Watch(Cm(), "", options, [&](const WatchEvent&) {
      ++events;
      return true;
    });
    ended = absl::Now();
    done = true;
  });
  const absl::Time start = absl::Now();
  for (int i = 0; i < 12; ++i) {  // 6 s of traffic, 3x the idle timeout
    ASSERT_TRUE(client_->Create(Cm(), CmObject(absl::StrCat("idle-", i))).ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ASSERT_FALSE(done) << "the watch ended while events were flowing: " << status;
  }
  const absl::Time quiet_since = absl::Now();
  watcher.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("read-idle timeout"));
  EXPECT_EQ(events.load(), 12);
  EXPECT_GT(ended - start, absl::Seconds(6));
  EXPECT_LT(ended - quiet_since, absl::Seconds(6));
}

TEST_F(KubeIntegrationTest, WatchCanBeCancelled) {
  WatchOptions options;
  options.cancel = std::make_shared<Cancellation>();
  const absl::Time start = absl::Now();
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    options.cancel->Cancel();
  });
  absl::Status s = client_->Watch(Cm(), "", options, [](const WatchEvent&) { return true; });
  canceller.join();
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

TEST_F(KubeIntegrationTest, ServiceAccountTokenWithoutRbacIsPermissionDenied) {
  auto sa =
      client_->Create(*Resource("serviceaccounts", ns_), json{{"metadata", {{"name", "nobody"}}}});
  ASSERT_TRUE(sa.ok()) << sa.status();
  bool ok = false;
  const std::string token =
      testing::RunCommand("kubectl --kubeconfig=" + KubeClusterEnvironment::kubeconfig() + " -n " +
                              ns_ + " create token nobody",
                          &ok);
  ASSERT_TRUE(ok && !token.empty()) << "kubectl create token failed";
  KubeConfig token_config = admin_config_;
  token_config.client_cert_pem.clear();
  token_config.client_key_pem.clear();
  token_config.token = token;
  auto client = ClientFor(token_config);
  ASSERT_NE(client, nullptr);
  auto denied = client->Get(*Resource("secrets", ns_, "anything"));
  EXPECT_EQ(denied.status().code(), absl::StatusCode::kPermissionDenied) << denied.status();
  const std::string msg(denied.status().message());
  EXPECT_THAT(msg, HasSubstr("get secrets \"anything\""));
  EXPECT_THAT(msg, HasSubstr("cannot get resource \"secrets\""));
  EXPECT_THAT(msg, HasSubstr("system:serviceaccount:" + ns_ + ":nobody"));

  KubeConfig bogus = token_config;
  bogus.token = "not-a-token";
  auto unauth = ClientFor(bogus)->Get(Cm("x"));
  EXPECT_EQ(unauth.status().code(), absl::StatusCode::kUnauthenticated) << unauth.status();
}

TEST_F(KubeIntegrationTest, TlsVerificationAndInsecureSkip) {
  KubeConfig no_ca = admin_config_;
  no_ca.ca_pem.clear();  // our CA is not in the system store
  auto rejected = ClientFor(no_ca)->Get(Cm("x"));
  EXPECT_EQ(rejected.status().code(), absl::StatusCode::kUnavailable) << rejected.status();
  KubeConfig insecure = no_ca;
  insecure.insecure_skip_tls_verify = true;
  auto got = ClientFor(insecure)->Get(Cm("x"));
  EXPECT_EQ(got.status().code(), absl::StatusCode::kNotFound) << got.status();

  KubeConfig bad_key = admin_config_;
  bad_key.client_key_pem =
      "-----BEGIN EC PRIVATE KEY-----\ngarbage\n-----END EC PRIVATE KEY-----\n";
  auto transport = CppRestTransport::Create(bad_key);
  EXPECT_EQ(transport.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tj::kube

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new tj::kube::testing::KubeClusterEnvironment);
  return RUN_ALL_TESTS();
}
