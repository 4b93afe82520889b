// tj-operator as a process against a real control plane, with the Helm chart's RBAC: the chart's
// ServiceAccount, ClusterRole and bindings are rendered by `helm template` and applied, and both
// operator processes authenticate with that ServiceAccount's token, so a verb the chart forgets
// fails this test. Two replicas compete for the Lease; the test plays the kubelet (pod status
// through pods/status); the leader is stopped mid-job and the other one finishes the job without
// recreating any pod. The leader's /metrics passes `promtool check metrics`. A job whose stored
// JSON makes the operator throw (past a CRD without a schema) is retried with backoff, counted
// and reported while another job is served.
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/v1alpha1/labels.h"
#include "api/v1alpha1/yaml_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/operator/controller/operator_process_fixture.h"
#include "tests/support/http_get.h"
#include "tests/support/wait_for.h"

namespace tj::op {
namespace {

using ::testing::HasSubstr;


TEST_F(OperatorProcessTest, TwoReplicasUnderChartRbacHandOverMidJobWithoutDuplicates) {
  a_ = StartOperator("op-a", operator_kubeconfig_, workdir_);
  b_ = StartOperator("op-b", operator_kubeconfig_, workdir_);
  ASSERT_TRUE(testing::WaitFor([&] { return !LeaseHolder().empty(); }))
      << "no replica took the Lease";
  OperatorProcess* leader = absl::StartsWith(LeaseHolder(), "op-a") ? &a_ : &b_;
  OperatorProcess* standby = leader == &a_ ? &b_ : &a_;
  EXPECT_THAT(testing::HttpGet(standby->health_port, "/readyz"), HasSubstr("200 OK"))
      << "a standby is ready";
  EXPECT_THAT(testing::HttpGet(leader->health_port, "/healthz"), HasSubstr("200 OK"));

  const std::string job_file =
      std::string(TJ_SOURCE_DIR) + "/tests/operator/controller/testdata/small-job.yaml";
  bool ok = false;
  std::string out = Kubectl(absl::StrCat("-n ", kJobNamespace, " apply -f ", Quote(job_file)), &ok);
  ASSERT_TRUE(ok) << out;
  ASSERT_TRUE(testing::WaitFor([&] { return Pods().size() == 4; })) << "pods: " << Pods().size();
  EXPECT_THAT(testing::HttpGet(leader->health_port, "/readyz"), HasSubstr("200 OK"));

  std::map<std::string, std::string> uids;
  int ip = 20;
  for (const auto& [name, pod] : Pods()) {
    uids[name] = pod["metadata"]["uid"];
    SetPodStatus(name, Running(absl::StrCat("127.0.0.", ip++)));
  }
  ASSERT_TRUE(testing::WaitFor([&] { return State() == "Running"; })) << State();

  // Only the replica acting exports figures of jobs (worked out at each scrape): sums over the
  // replicas count each job once.
  EXPECT_TRUE(testing::WaitFor([&] {
    return absl::StrContains(testing::HttpGet(leader->metrics_port, "/metrics"),
                             "tj_operator_jobs{state=\"Running\"} 1");
  }));
  EXPECT_THAT(testing::HttpGet(leader->metrics_port, "/metrics"),
              HasSubstr(R"(tj_trainingjob_phase{phase="Running",trainingjob="digits")"));
  const std::string standby_scrape = testing::HttpGet(standby->metrics_port, "/metrics");
  EXPECT_THAT(standby_scrape, HasSubstr("200 OK")) << "the standby serves its metrics";
  EXPECT_THAT(standby_scrape, ::testing::Not(HasSubstr("tj_operator_jobs{")));
  EXPECT_THAT(standby_scrape, ::testing::Not(HasSubstr("tj_trainingjob_")));

  // The leader goes away (SIGTERM: it releases the Lease); the standby takes over at once.
  const std::string old_leader = LeaseHolder();
  EXPECT_EQ(StopOperator(*leader), 0) << "a clean shutdown";
  ASSERT_TRUE(testing::WaitFor([&] {
    const std::string holder = LeaseHolder();
    return !holder.empty() && holder != old_leader;
  })) << "the standby never took over; holder "
      << LeaseHolder();
  EXPECT_TRUE(absl::StartsWith(LeaseHolder(), standby->name));

  SetPodStatus("digits-coordinator-0", Exited(0));
  ASSERT_TRUE(testing::WaitFor([&] { return State() == "Succeeded"; })) << State();
  ASSERT_TRUE(testing::WaitFor([&] {
    std::map<std::string, json> pods = Pods();
    return pods.size() == 1 && pods.contains("digits-coordinator-0");
  })) << "cleanPodPolicy Running leaves only the finished coordinator";
  EXPECT_EQ(Pods()["digits-coordinator-0"]["metadata"]["uid"], uids["digits-coordinator-0"])
      << "the new leader recreated nothing";

  // The standby-turned-leader's metrics, read by Prometheus' own parser.
  std::string scrape;
  EXPECT_TRUE(testing::WaitFor([&] {
    scrape = testing::HttpGet(standby->metrics_port, "/metrics");
    return absl::StrContains(scrape, "tj_operator_jobs{state=\"Succeeded\"} 1");
  })) << scrape;
  const size_t body = scrape.find("\r\n\r\n");
  ASSERT_NE(body, std::string::npos) << scrape;
  std::ofstream(workdir_ + "/operator-metrics.txt") << scrape.substr(body + 4);
  EXPECT_THAT(scrape, HasSubstr("tj_operator_reconcile_duration_seconds_count"));
  out = Shell("promtool check metrics < " + Quote(workdir_ + "/operator-metrics.txt"), &ok);
  EXPECT_TRUE(ok) << out;

  // Every action was an Event on the job.
  const std::string events =
      Kubectl(absl::StrCat("-n ", kJobNamespace,
                           " get events --field-selector involvedObject.name=digits -o "
                           "jsonpath='{range .items[*]}{.reason}: {.message}{\"\\n\"}{end}'"));
  // One Event for the objects a reconcile created, naming them.
  EXPECT_THAT(events, HasSubstr("Created: created the token secret digits-job-token, "));
  EXPECT_THAT(events, ::testing::ContainsRegex("pods \\(digits-coordinator-0, digits-ps-0, "));
  EXPECT_THAT(events, HasSubstr("Succeeded"));

  // Another holder appears in the Lease (a replica the leader cannot see, a split brain): the
  // leader stops leading and exits non-zero for a fresh process to compete; it must not keep
  // reconciling with spent informers.
  out = Kubectl(absl::StrCat("-n ", kOperatorNamespace,
                             " patch lease tj-operator-it --type=merge -p "
                             "'{\"spec\":{\"holderIdentity\":\"intruder\"}}'"),
                &ok);
  ASSERT_TRUE(ok) << out;
  int status = 0;
  ASSERT_TRUE(testing::WaitFor(
      [&] { return waitpid(standby->pid, &status, WNOHANG) == standby->pid; }, absl::Seconds(60)))
      << "the leader kept running after losing the Lease";
  standby->pid = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << "status " << status;
}

// The value of the sample `series` (name and labels, as rendered) in a scrape; -1 if absent.
double Sample(const std::string& scrape, const std::string& series) {
  const size_t at = scrape.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::atof(scrape.c_str() + at + series.size() + 2);
}

TEST_F(OperatorProcessTest, AJobThatMakesTheOperatorThrowIsRetriedWhileAnotherIsServed) {
  constexpr char kNamespace[] = "op-throw";
  // A CRD without a schema, so a field of the wrong type reaches the operator: here a volume
  // whose name is a number, which the pod builder's nlohmann value("name", "") throws on.
  bool ok = false;
  std::string out = Kubectl("get crd trainingjobs.trainingjob.dev -o json", &ok);
  ASSERT_TRUE(ok) << out;
  const json original = json::parse(out);
  json schemaless = original;
  for (json& version : schemaless["spec"]["versions"]) {
    version["schema"]["openAPIV3Schema"] = {{"type", "object"},
                                            {"x-kubernetes-preserve-unknown-fields", true}};
    // The scale subresource's paths must be in a schema; this case does not scale.
    if (version.contains("subresources")) version["subresources"].erase("scale");
  }
  restore_crd_ = original;
  ASSERT_TRUE(ReplaceCrd(schemaless));
  out = Kubectl(absl::StrCat("create namespace ", kNamespace), &ok);
  ASSERT_TRUE(ok || absl::StrContains(out, "AlreadyExists")) << out;

  const std::string job_file =
      std::string(TJ_SOURCE_DIR) + "/tests/operator/controller/testdata/small-job.yaml";
  auto good = v1alpha1::YamlToJson(ReadFile(job_file), job_file);
  ASSERT_TRUE(good.ok()) << good.status();
  json broken = *good;
  broken["metadata"]["name"] = "broken";
  for (auto& [type, replica] : broken["spec"]["replicaSpecs"].items()) {
    replica["template"]["spec"]["volumes"] =
        json::array({{{"name", 5}, {"emptyDir", json::object()}}});
  }
  // The broken job first, so it is in the queue before the good one.
  for (const json& job : {broken, *good}) {
    const std::string path =
        absl::StrCat(workdir_, "/", job["metadata"]["name"].get<std::string>(), ".json");
    std::ofstream(path) << job.dump();
    // Until the API server serves the CRD without its schema, the number is refused.
    ASSERT_TRUE(testing::WaitFor([&] {
      out = Kubectl(absl::StrCat("-n ", kNamespace, " create -f ", Quote(path)), &ok);
      return ok || absl::StrContains(out, "AlreadyExists");
    })) << out;
    // The API server kept the number: nothing between it and the operator fixed the type.
    if (job["metadata"]["name"] == "broken") {
      EXPECT_EQ(Kubectl(absl::StrCat("-n ", kNamespace,
                                     " get tj broken -o jsonpath='{.spec.replicaSpecs.Worker."
                                     "template.spec.volumes[0].name}'")),
                "5");
    }
  }

  a_ = StartOperator("op-throw", operator_kubeconfig_, workdir_, "tj-operator-throw-it");
  auto pods_of = [&](const std::string& job) {
    int count = 0;
    kube::ListOptions options;
    options.label_selector = absl::StrCat(v1alpha1::kJobNameLabel, "=", job);
    auto list = admin_->List(*kube::Resource("pods", kNamespace), options);
    if (list.ok()) count = static_cast<int>((*list)["items"].size());
    return count;
  };
  ASSERT_TRUE(testing::WaitFor([&] { return pods_of("digits") == 4; }))
      << "the good job was not served; its pods: " << pods_of("digits");
  EXPECT_EQ(pods_of("broken"), 0);

  // The broken job keeps failing, with backoff, and each failure is counted.
  std::string scrape;
  ASSERT_TRUE(testing::WaitFor([&] {
    scrape = testing::HttpGet(a_.metrics_port, "/metrics");
    return Sample(scrape, "tj_operator_reconcile_errors_total{reason=\"exception\"}") >= 2;
  })) << scrape;
  // A Warning Event on the job says what went wrong.
  std::string events;
  ASSERT_TRUE(testing::WaitFor([&] {
    events = Kubectl(
        absl::StrCat("-n ", kNamespace,
                     " get events --field-selector involvedObject.name=broken,type=Warning -o "
                     "jsonpath='{range .items[*]}{.reason}: {.message}{\"\\n\"}{end}'"));
    return absl::StrContains(events, "type must be string");
  })) << events;
  EXPECT_THAT(events, HasSubstr("internal error while building or writing the object"));
  int status = 0;
  // Reaps the operator if it ended (so TearDown does not signal a reaped pid).
  auto exited = [&] {
    if (a_.pid <= 0) return true;
    if (waitpid(a_.pid, &status, WNOHANG) != a_.pid) return false;
    a_.pid = -1;
    return true;
  };
  EXPECT_FALSE(exited()) << "the operator exited; status " << status;

  // A status that is not what the operator writes (a condition's status a number, a condition
  // that is not an object) is read by the job gauges every second; it once ended the process.
  // On the good job: it has pods, so the reconciler reports the invalid status (a Warning
  // InvalidSpec) and keeps it rather than writing its own over it.
  out = Kubectl(
      absl::StrCat("-n ", kNamespace,
                   " patch tj digits --subresource=status --type=merge -p "
                   "'{\"status\":{\"conditions\":[{\"type\":\"Failed\",\"status\":5},7]}}'"),
      &ok);
  ASSERT_TRUE(ok) << out;
  // Once the reconciler has seen it, the informer's cache holds it.
  ASSERT_TRUE(testing::WaitFor([&] {
    events = Kubectl(
        absl::StrCat("-n ", kNamespace,
                     " get events --field-selector involvedObject.name=digits,reason=InvalidSpec "
                     "-o jsonpath='{range .items[*]}{.message}{\"\\n\"}{end}'"));
    return !events.empty() || exited();
  })) << "the reconciler never reported the odd status";
  EXPECT_THAT(events, HasSubstr("status.conditions"));
  // The gauges run every second: five of them must not end the process.
  EXPECT_FALSE(testing::WaitFor(exited, absl::Seconds(5)))
      << "the operator exited on the job's status; status " << status;
  Kubectl(absl::StrCat("delete namespace ", kNamespace, " --wait=false"));
}

// A TrainingJob as JSON: `workers` workers, one PS, in `ns`.
json JobObject(const std::string& ns, const std::string& name, int64_t workers) {
  const json containers =
      json::array({{{"name", "trainer"}, {"image", "trainingjob/tj-runtime:dev"}}});
  const json replica = {{"template", {{"spec", {{"containers", containers}}}}}};
  json worker = replica;
  worker["replicas"] = workers;
  return {{"apiVersion", "trainingjob.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"replicaSpecs", {{"Coordinator", replica}, {"PS", replica}, {"Worker", worker}}}}}};
}

// VmHWM (peak resident memory) of a process, in KiB; -1 when unreadable.
int64_t PeakRssKib(pid_t pid) {
  std::istringstream status(ReadFile(absl::StrCat("/proc/", pid, "/status")));
  std::string line;
  while (std::getline(status, line)) {
    if (absl::StartsWith(line, "VmHWM:")) return std::stoll(line.substr(6));
  }
  return -1;
}

class OperatorLimitsTest : public OperatorProcessTest {
 protected:
  void TearDown() override {
    // The CRD as shipped, whatever a test did to it.
    Kubectl("apply -f " +
            Quote(std::string(TJ_SOURCE_DIR) + "/crds/trainingjob.dev_trainingjobs.yaml"));
    OperatorProcessTest::TearDown();
  }

  void CreateNamespace(const std::string& ns) {
    bool ok = false;
    const std::string out = Kubectl("create namespace " + ns, &ok);
    ASSERT_TRUE(ok || absl::StrContains(out, "AlreadyExists")) << out;
  }
  void Create(const json& job) {
    const std::string file =
        absl::StrCat(workdir_, "/", job["metadata"]["name"].get<std::string>(), ".json");
    std::ofstream(file) << job.dump();
    bool ok = false;
    const std::string out = Kubectl("create -f " + Quote(file), &ok);
    ASSERT_TRUE(ok) << out;
  }
  json Job(const std::string& ns, const std::string& name) {
    bool ok = false;
    const std::string out = Kubectl(absl::StrCat("-n ", ns, " get tj ", name, " -o json"), &ok);
    return ok ? json::parse(out, nullptr, false) : json();
  }
  // The Failed condition's message once the job is Failed; "" until then.
  std::string FailedMessage(const std::string& ns, const std::string& name) {
    const json job = Job(ns, name);
    if (!job.is_object() || !job.contains("status") ||
        job["status"].value("state", "") != "Failed") {
      return "";
    }
    for (const json& c : job["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "Failed") return c.value("message", "?");
    }
    return "?";
  }
  size_t PodCount(const std::string& ns, const std::string& job) {
    kube::ListOptions options;
    options.label_selector = "trainingjob.dev/job-name=" + job;
    auto list = admin_->List(*kube::Resource("pods", ns), options);
    return list.ok() ? (*list)["items"].size() : 0;
  }
};

// The measured incident: a job with 2,000,000,000 workers, here created under a CRD that lacks the
// limits (an older CRD, or one installed without validation). The operator marks it Failed naming
// the field, without allocating for its replicas; its memory stays bounded; a job next to it gets
// its pods. A job within the replica limits whose TF_CONFIG would not fit in an environment
// variable (long names, 1000 replicas) is refused the same way, naming the job and the replica.
TEST_F(OperatorLimitsTest, HostileJobIsFailedWithBoundedMemoryAndOtherJobsRun) {
  const std::string ns = "op-limits";
  CreateNamespace(ns);
  // The CRD without its replica limits (the maxima and the total's CEL rule).
  const std::string schema =
      "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/replicaSpecs";
  json patch = json::array({{{"op", "remove"}, {"path", schema + "/x-kubernetes-validations/1"}}});
  for (const char* type : {"Coordinator", "PS", "Worker"}) {
    patch.push_back(
        {{"op", "remove"},
         {"path", absl::StrCat(schema, "/properties/", type, "/properties/replicas/maximum")}});
  }
  bool ok = false;
  std::string out =
      Kubectl("patch crd trainingjobs.trainingjob.dev --type=json -p " + Quote(patch.dump()), &ok);
  ASSERT_TRUE(ok) << out;
  const json hostile = JobObject(ns, "hostile", 2000000000);
  const std::string hostile_file = workdir_ + "/hostile.json";
  std::ofstream(hostile_file) << hostile.dump();
  // The API server takes the new schema on shortly after the patch.
  ASSERT_TRUE(testing::WaitFor([&] {
    bool created = false;
    Kubectl("create -f " + Quote(hostile_file), &created);
    return created;
  })) << "the CRD without limits never accepted the hostile job";

  // A job within the limits whose TF_CONFIG cannot fit: 1000 replicas, 49 + 63 characters of names.
  const std::string long_ns(63, 'n');
  CreateNamespace(long_ns);
  Create(JobObject(long_ns, std::string(49, 'j'), 998));

  a_ = StartOperator("op-limits", operator_kubeconfig_, workdir_, "tj-operator-limits-it",
                     {"--leader-elect=false"});
  ASSERT_TRUE(testing::WaitFor([&] { return !FailedMessage(ns, "hostile").empty(); }))
      << Job(ns, "hostile").dump(2);
  EXPECT_THAT(FailedMessage(ns, "hostile"),
              HasSubstr("spec.replicaSpecs.Worker.replicas: Invalid value: 2000000000: must be "
                        "less than or equal to 1000"));
  EXPECT_EQ(PodCount(ns, "hostile"), 0u);

  ASSERT_TRUE(
      testing::WaitFor([&] { return !FailedMessage(long_ns, std::string(49, 'j')).empty(); }));
  const std::string tf_config = FailedMessage(long_ns, std::string(49, 'j'));
  EXPECT_THAT(tf_config,
              HasSubstr(absl::StrCat("TF_CONFIG of job ", long_ns, "/", std::string(49, 'j'))));
  EXPECT_THAT(tf_config, HasSubstr("MAX_ARG_STRLEN"));
  EXPECT_EQ(PodCount(long_ns, std::string(49, 'j')), 0u);

  // Another tenant's job, created next to them, gets its pods from the same operator.
  Create(JobObject(ns, "neighbour", 2));
  ASSERT_TRUE(testing::WaitFor([&] { return PodCount(ns, "neighbour") == 4; }))
      << PodCount(ns, "neighbour");

  int status = 0;
  ASSERT_EQ(waitpid(a_.pid, &status, WNOHANG), 0) << "the operator died";
  const int64_t peak_kib = PeakRssKib(a_.pid);
  ASSERT_GT(peak_kib, 0);
  EXPECT_LT(peak_kib, 300 * 1024) << "peak RSS " << peak_kib << " KiB";
  std::cerr << "tj-operator peak RSS (VmHWM) with the hostile job: " << peak_kib << " KiB\n";
  EXPECT_EQ(StopOperator(a_), 0);
}

// SIGTERM while a reconcile is busy handing a 1000-replica job's creates to a write queue of one
// (each create waits for the one before it), with two more such jobs queued: the operator stops
// at once, in order (exit 0), instead of first sending every write and
// reconciling every queued job. --shutdown-timeout is set beyond the wait below, so a forced exit
// cannot pass for an orderly one.
TEST_F(OperatorLimitsTest, SigtermDuringBusyReconcileStopsWithinTheGracePeriod) {
  const std::string ns = "op-busy";
  CreateNamespace(ns);
  for (const char* name : {"busy-a", "busy-b", "busy-c"}) Create(JobObject(ns, name, 998));
  a_ = StartOperator("op-busy", operator_kubeconfig_, workdir_, "tj-operator-busy-it",
                     {"--leader-elect=false", "--workers=1", "--write-concurrency=1",
                      "--write-queue-capacity=1", "--shutdown-timeout=120s"});
  auto created = [&] {
    return PodCount(ns, "busy-a") + PodCount(ns, "busy-b") + PodCount(ns, "busy-c");
  };
  ASSERT_TRUE(testing::WaitFor([&] { return created() >= 5; })) << "no reconcile got busy";
  const size_t at_signal = created();
  ASSERT_LT(at_signal, 500u) << "the writes were over before the signal: nothing was busy";

  kill(a_.pid, SIGTERM);
  int status = 0;
  // The pod's grace period: Kubernetes' default terminationGracePeriodSeconds (the chart's too).
  const bool exited = testing::WaitFor([&] { return waitpid(a_.pid, &status, WNOHANG) == a_.pid; },
                                       absl::Seconds(30));
  if (!exited) {
    kill(a_.pid, SIGKILL);
    waitpid(a_.pid, &status, 0);
  }
  a_.pid = -1;
  ASSERT_TRUE(exited) << "still running 30 s after SIGTERM";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "not an orderly stop: " << status;
  EXPECT_LT(created(), 2994u) << "it created every pod before stopping";
}

}  // namespace
}  // namespace tj::op

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new tj::kube::testing::KubeClusterEnvironment);
  return RUN_ALL_TESTS();
}
