// Reading pods as the kubelet and the control plane write them: phases, exit codes, OOM kills,
// DisruptionTarget reasons, deletion, node health.
#include "operator/controller/observed_pod.h"

#include "gtest/gtest.h"
#include "operator/controller/replica_objects.h"
#include "tests/operator/controller/controller_test_jobs.h"

namespace tj::op {
namespace {

using nlohmann::json;

json Pod(const std::string& phase, json extra_status = json::object()) {
  json pod = json::parse(R"({
    "metadata": {"name": "digits-worker-1", "uid": "u1",
                 "labels": {"trainingjob.dev/job-name": "digits",
                            "trainingjob.dev/replica-type": "worker",
                            "trainingjob.dev/replica-index": "1"}},
    "spec": {"nodeName": "n1", "containers": [{"name": "sidecar"}, {"name": "trainer"}]},
    "status": {}})");
  // The trainer is the first container of the spec; put it first.
  pod["spec"]["containers"] = json::array({{{"name", "trainer"}}, {{"name", "sidecar"}}});
  pod["status"] = extra_status;
  pod["status"]["phase"] = phase;
  return pod;
}

json Terminated(int code, const std::string& reason) {
  return {{"containerStatuses",
           json::array({{{"name", "sidecar"}, {"state", {{"terminated", {{"exitCode", 0}}}}}},
                        {{"name", "trainer"},
                         {"state",
                          {{"terminated",
                            {{"exitCode", code},
                             {"reason", reason},
                             {"finishedAt", "2026-11-22T10:00:00Z"}}}}}}})}};
}

TEST(ObservedPodTest, ReadsReplicaFromLabels) {
  auto pod = ObservePod(Pod("Running", {{"podIP", "10.0.0.7"}}));
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->key.type, ReplicaType::kWorker);
  EXPECT_EQ(pod->key.index, 1);
  EXPECT_EQ(pod->phase, ReplicaPhase::kRunning);
  EXPECT_EQ(pod->pod_ip, "10.0.0.7");
  EXPECT_EQ(pod->node_name, "n1");
}

// Whether a pod serves TLS is read from its volumes: the operator's pod cache drops every env.
TEST(ObservedPodTest, APodMountingItsCertificateServesTlsEvenWithItsEnvDropped) {
  auto job =
      std::make_shared<const v1alpha1::TrainingJob>(testing::LoadJob(testing::SmallJobYaml()));
  for (bool tls : {true, false}) {
    auto pods = JobPods::Create(job, tls);
    ASSERT_TRUE(pods.ok()) << pods.status();
    auto pod = BuildReplicaPod(**pods, {ReplicaType::kCoordinator, 0});
    ASSERT_TRUE(pod.ok()) << pod.status();
    (*pod)["spec"]["containers"][0].erase("env");  // as the informer's transform does
    auto observed = ObservePod(*pod);
    ASSERT_TRUE(observed.ok()) << observed.status();
    EXPECT_EQ(observed->tls, tls);
  }
}

TEST(ObservedPodTest, BadLabelsAreAnErrorNamingTheLabel) {
  json pod = Pod("Running");
  pod["metadata"]["labels"]["trainingjob.dev/replica-index"] = "one";
  auto observed = ObservePod(pod);
  ASSERT_FALSE(observed.ok());
  EXPECT_NE(observed.status().message().find("trainingjob.dev/replica-index"), std::string::npos);
  pod["metadata"]["labels"]["trainingjob.dev/replica-type"] = "evaluator";
  EXPECT_NE(ObservePod(pod).status().message().find("evaluator"), std::string::npos);
}

TEST(ObservedPodTest, TerminationComesFromTheTrainerContainer) {
  auto failed = ObservePod(Pod("Failed", Terminated(42, "Error")));
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->phase, ReplicaPhase::kTerminated);
  EXPECT_EQ(failed->termination.exit_code, 42);  // not the sidecar's 0
  EXPECT_FALSE(failed->termination.oom_killed);
  EXPECT_FALSE(failed->termination.disrupted);
  ASSERT_TRUE(failed->finished_at.has_value());

  auto oom = ObservePod(Pod("Failed", Terminated(137, "OOMKilled")));
  EXPECT_TRUE(oom->termination.oom_killed);
  EXPECT_EQ(oom->termination.exit_code, 137);
}

TEST(ObservedPodTest, DisruptionTargetMarksTheTerminationDisrupted) {
  for (const char* reason : {"PreemptionByScheduler", "DeletionByTaintManager",
                             "EvictionByEvictionAPI", "DeletionByPodGC", "TerminationByKubelet"}) {
    json status = Terminated(143, "Error");
    status["conditions"] = json::array({{{"type", "DisruptionTarget"},
                                         {"status", "True"},
                                         {"reason", reason}}});
    auto pod = ObservePod(Pod("Failed", status));
    ASSERT_TRUE(pod.ok());
    EXPECT_TRUE(pod->termination.disrupted) << reason;
    EXPECT_EQ(pod->disruption, std::string("DisruptionTarget/") + reason);
  }
  json not_true = Terminated(1, "Error");
  not_true["conditions"] = json::array({{{"type", "DisruptionTarget"}, {"status", "False"}}});
  EXPECT_FALSE(ObservePod(Pod("Failed", not_true))->termination.disrupted);
}

TEST(ObservedPodTest, FailedWithoutContainerStatusIsAnErrorUnlessEvicted) {
  EXPECT_EQ(ObservePod(Pod("Failed"))->termination.exit_code, 1);
  auto evicted = ObservePod(Pod("Failed", {{"reason", "Evicted"}}));
  EXPECT_TRUE(evicted->termination.disrupted);
}

TEST(ObservedPodTest, DeletionTimestampIsTheDeadline) {
  json pod = Pod("Running");
  pod["metadata"]["deletionTimestamp"] = "2026-11-22T10:00:30Z";
  auto observed = ObservePod(pod);
  ASSERT_TRUE(observed->deletion_deadline.has_value());
  EXPECT_EQ(absl::ToUnixSeconds(*observed->deletion_deadline), 1795341630);
  EXPECT_EQ(PreemptionSignal(*observed, nullptr, true), "Deleted");
}

TEST(ObservedPodTest, NodeHealthDecidesTheSignal) {
  auto pod = ObservePod(Pod("Running"));
  const json ready = {{"status", {{"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
  const json unknown = {{"status", {{"conditions", json::array({{{"type", "Ready"}, {"status", "Unknown"}}})}}}};
  EXPECT_TRUE(NodeIsReady(ready));
  EXPECT_FALSE(NodeIsReady(unknown));
  EXPECT_EQ(PreemptionSignal(*pod, &ready, true), "");
  EXPECT_EQ(PreemptionSignal(*pod, &unknown, true), "NodeNotReady");
  EXPECT_EQ(PreemptionSignal(*pod, nullptr, true), "NodeGone");
  EXPECT_EQ(PreemptionSignal(*pod, nullptr, false), "") << "an unknown node proves nothing";
  auto ended = ObservePod(Pod("Failed", Terminated(1, "Error")));
  EXPECT_EQ(PreemptionSignal(*ended, &unknown, true), "") << "a terminated pod needs no notice";
}

}  // namespace
}  // namespace tj::op
