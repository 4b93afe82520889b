// The fixture of the Reconciler's integration tests against a real kube-apiserver
// (tests/kube-test-cluster/) with the real CRD (crds/): a namespace per test, the Reconciler
// reading through DirectClusterView (no cache lag, so every Reconcile sees the previous one's
// writes), the test playing the kubelet (pod status through pods/status). Shared by
// reconciler_integration_test.cc, gang_scheduling_integration_test.cc and
// checkpoint_volume_integration_test.cc, one binary and one control plane.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "api/v1alpha1/status_json.h"
#include "api/v1alpha1/yaml_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/controller/cluster_view.h"
#include "operator/controller/reconciler.h"
#include "operator/kube/cpprest_transport.h"
#include "operator/kube/kube_client_impl.h"
#include "operator/kube/kube_config.h"
#include "operator/kube/resource.h"
#include "tests/operator/controller/kubelet_status.h"
#include "tests/operator/controller/recording_sinks.h"
#include "tests/operator/kube/kube_cluster_env.h"
#include "tests/support/wait_for.h"

namespace tj::op::testing {

using ::tj::testing::WaitFor;
using kube::testing::KubeClusterEnvironment;
using nlohmann::json;

inline std::string Quote(const std::string& s) { return "'" + s + "'"; }

inline std::string Kubectl(const std::string& args, bool* ok = nullptr) {
  bool success = false;
  std::string out = kube::testing::RunCommand(
      "kubectl --kubeconfig=" + Quote(KubeClusterEnvironment::kubeconfig()) + " " + args + " 2>&1",
      &success);
  if (ok) *ok = success;
  return out;
}

inline constexpr char kJobYaml[] = R"(apiVersion: trainingjob.dev/v1alpha1
kind: TrainingJob
metadata:
  name: digits
spec:
  runPolicy: {backoffLimit: BACKOFF EXTRA_RUN_POLICY}
  replicaSpecs:
    Coordinator:
      template:
        spec:
          schedulerName: SCHEDULER
          containers:
          - {name: trainer, image: "trainingjob/runtime:dev", command: [tj-train]}
    PS:
      template:
        spec:
          schedulerName: SCHEDULER
          containers:
          - {name: trainer, image: "trainingjob/runtime:dev", command: [tj-train]}
    Worker:
      replicas: 2
      template:
        spec:
          schedulerName: SCHEDULER
          containers:
          - name: trainer
            image: trainingjob/runtime:dev
            command: [tj-train]
            env: [{name: MODEL, value: softmax}]
)";


// A namespace per test (named after it), a Reconciler reading through DirectClusterView, the
// test's clock, Events, notices and progress recorded.
class ReconcilerIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!KubeClusterEnvironment::skip_reason().empty()) return;
    bool ok = false;
    const std::string applied =
        Kubectl("apply -f " + Quote(std::string(TJ_SOURCE_DIR) + "/crds/trainingjob.dev_trainingjobs.yaml"), &ok);
    ASSERT_TRUE(ok) << applied;
    ASSERT_TRUE(testing::WaitFor([] {
      return Kubectl("get crd trainingjobs.trainingjob.dev -o "
                     "jsonpath='{.status.conditions[?(@.type==\"Established\")].status}'") ==
             "True";
    })) << "the CRD never became Established";
  }

  void SetUp() override {
    if (!KubeClusterEnvironment::skip_reason().empty()) {
      GTEST_SKIP() << KubeClusterEnvironment::skip_reason();
    }
    auto config = kube::LoadKubeConfigFiles({KubeClusterEnvironment::kubeconfig()});
    ASSERT_TRUE(config.ok()) << config.status();
    auto transport = kube::CppRestTransport::Create(*config);
    ASSERT_TRUE(transport.ok()) << transport.status();
    client_ = std::make_unique<kube::KubeClientImpl>(
        std::shared_ptr<kube::HttpTransport>(std::move(*transport)));
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    ns_ = "rc-" + name.substr(0, 50);
    auto created =
        client_->Create(*kube::Resource("namespaces"), json{{"metadata", {{"name", ns_}}}});
    ASSERT_TRUE(created.ok() || absl::IsAlreadyExists(created.status())) << created.status();
    view_ = std::make_unique<DirectClusterView>(*client_);
    ReconcilerOptions options;
    options.clock = [this] { return now_; };
    options.terminating_pod_timeout = absl::Minutes(5);
    options.progress = &progress_;
    reconciler_ = std::make_unique<Reconciler>(*view_, *client_, notifier_, events_, options);
  }

  void CreateJob(int backoff_limit = 6, const std::string& extra_run_policy = "",
                 const std::string& name = "digits") {
    std::string yaml = absl::StrReplaceAll(
        kJobYaml, {{"BACKOFF", std::to_string(backoff_limit)},
                   {"EXTRA_RUN_POLICY", extra_run_policy.empty() ? "" : ", " + extra_run_policy},
                   {"name: digits", "name: " + name},
                   {"SCHEDULER", scheduler_name_}});
    auto manifest = v1alpha1::YamlToJson(yaml, "job.yaml");
    ASSERT_TRUE(manifest.ok()) << manifest.status();
    auto created = client_->Create(*kube::Resource("trainingjobs", ns_), *manifest);
    ASSERT_TRUE(created.ok()) << created.status();
  }

  ReconcileResult Reconcile(const std::string& name = "digits") {
    ReconcileResult result = reconciler_->Reconcile(ns_ + "/" + name);
    EXPECT_TRUE(result.status.ok()) << result.status;
    return result;
  }

  // A fresh reconciler (no memory) that asks `scheduler` for gang scheduling.
  void UseGangScheduler(GangScheduler scheduler) {
    ReconcilerOptions options;
    options.clock = [this] { return now_; };
    options.pods.gang_scheduler = scheduler;
    reconciler_ = std::make_unique<Reconciler>(*view_, *client_, notifier_, events_, options);
  }

  json Job(const std::string& name = "digits") {
    auto job = client_->Get(*kube::Resource("trainingjobs", ns_, name));
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? *job : json::object();
  }
  // A copy: ranging over a member of the temporary Job() would dangle.
  json Conditions(const std::string& name = "digits") {
    json job = Job(name);
    return job.contains("status") ? job["status"].value("conditions", json::array()) : json::array();
  }
  json CreatedCondition(const std::string& name = "digits") {
    for (const json& c : Conditions(name)) {
      if (c["type"] == "Created") return c;
    }
    return json::object();
  }
  std::string State(const std::string& name = "digits") {
    json job = Job(name);
    return job.contains("status") ? job["status"].value("state", "") : "";
  }

  std::map<std::string, json> Pods() {
    std::map<std::string, json> out;
    auto list = client_->List(*kube::Resource("pods", ns_), {});
    EXPECT_TRUE(list.ok()) << list.status();
    if (!list.ok()) return out;
    for (const json& pod : (*list)["items"]) {
      if (pod["metadata"].contains("deletionTimestamp")) continue;
      out[pod["metadata"]["name"].get<std::string>()] = pod;
    }
    return out;
  }

  // What a kubelet writes.
  void SetRunning(const std::string& pod, const std::string& ip = "127.0.0.9") {
    Patch(pod, kubelet::RunningPodStatus(ip));
  }
  void SetExited(const std::string& pod, int exit_code, json conditions = json::array()) {
    json status = kubelet::ExitedPodStatus(exit_code);
    if (!conditions.empty()) status["conditions"] = conditions;
    Patch(pod, status);
  }
  void Patch(const std::string& pod, const json& status) {
    kube::ResourceRef ref = *kube::Resource("pods", ns_, pod);
    ref.subresource = "status";
    auto patched = client_->MergePatch(ref, {{"status", status}});
    ASSERT_TRUE(patched.ok()) << patched.status();
  }
  void AllRunning() {
    for (const auto& [name, pod] : Pods()) SetRunning(name);
  }
  json Secret() {
    auto secret = client_->Get(*kube::Resource("secrets", ns_, "digits-job-token"));
    EXPECT_TRUE(secret.ok()) << secret.status();
    return secret.ok() ? (*secret)["data"] : json::object();
  }
  // A key of the job's Secret, decoded ("" when absent).
  std::string SecretValue(const std::string& key) {
    const json data = Secret();
    std::string decoded;
    if (!data.contains(key) || !absl::Base64Unescape(data[key].get<std::string>(), &decoded)) {
      return "";
    }
    return decoded;
  }

  std::unique_ptr<kube::KubeClient> client_;
  std::unique_ptr<DirectClusterView> view_;
  RecordingEvents events_;
  RecordingNotifier notifier_;
  FixedProgress progress_;
  std::unique_ptr<Reconciler> reconciler_;
  // The jobs' pods name a scheduler that does not run: the tests write what a scheduler and kubelet
  // would, and the control plane's kube-scheduler (which has no node to offer) marking every pod
  // Unschedulable on its own time would race them. A test that wants it sets "default-scheduler".
  std::string scheduler_name_ = "tj-test-no-scheduler";
  std::string ns_;
  absl::Time now_ = absl::Now();
};

}  // namespace tj::op::testing
