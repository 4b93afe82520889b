// spec.failurePolicy and replicaSpecs.<T>.replacementPolicy against the real API server (fixture:
// reconciler_integration_fixture.h; the test plays the kubelet): a FailJob rule fails the job on
// an exit code that would otherwise restart, a RestartJob rule replaces every pod counted once,
// and a coordinator that exits on a PS's notice gets its successor only once that PS has ended,
// so one PS preemption costs one coordinator restart.
#include <string>

#include "tests/operator/controller/reconciler_integration_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::HasSubstr;

class FailurePolicyIntegrationTest : public ReconcilerIntegrationTest {
 protected:
  // The job of the fixture with `spec_patch` merged into its spec before its first reconcile.
  void CreateJobWith(const json& spec_patch) {
    CreateJob();
    auto patched = client_->MergePatch(*kube::Resource("trainingjobs", ns_, "digits"),
                                       {{"spec", spec_patch}});
    ASSERT_TRUE(patched.ok()) << patched.status();
  }
  std::string Uid(const std::string& pod) {
    const std::map<std::string, json> pods = Pods();
    auto it = pods.find(pod);
    return it == pods.end() ? "" : it->second["metadata"].value("uid", "");
  }
  json ConditionOf(const std::string& type) {
    for (const json& c : Conditions()) {
      if (c["type"] == type) return c;
    }
    return json::object();
  }
};

TEST_F(FailurePolicyIntegrationTest, AFailJobRuleFailsTheJobOnAnExitCodeThatWouldRestart) {
  CreateJobWith({{"failurePolicy",
                  {{"rules", json::array({{{"action", "FailJob"},
                                           {"replicaTypes", json::array({"Worker"})},
                                           {"onExitCodes",
                                            {{"operator", "In"}, {"values", json::array({137})}}}}})}}}});
  Reconcile();
  AllRunning();
  Reconcile();
  ASSERT_EQ(State(), "Running");
  SetExited("digits-worker-1", 137);  // SIGKILL restarts under ExitCode; the rule says fail
  Reconcile();
  EXPECT_EQ(State(), "Failed");
  const json failed = ConditionOf("Failed");
  EXPECT_EQ(failed["reason"], "FailurePolicyFailJob");
  EXPECT_THAT(failed["message"].get<std::string>(),
              HasSubstr("worker 1 exited with code 137, which matches spec.failurePolicy.rules[0]"));
  EXPECT_EQ(Job()["status"].value("restartCount", 0), 0);
  EXPECT_FALSE(Pods().contains("digits-ps-0")) << "cleanPodPolicy Running stops the PS";
}

TEST_F(FailurePolicyIntegrationTest, ARestartJobRuleReplacesEveryPodCountedOnce) {
  CreateJobWith({{"failurePolicy",
                  {{"rules", json::array({{{"action", "RestartJob"},
                                           {"replicaTypes", json::array({"Worker"})},
                                           {"onExitCodes",
                                            {{"operator", "In"}, {"values", json::array({137})}}}}})}}}});
  Reconcile();
  AllRunning();
  Reconcile();
  std::map<std::string, std::string> before;
  for (const auto& [name, pod] : Pods()) before[name] = pod["metadata"]["uid"];
  ASSERT_EQ(before.size(), 4u);
  SetExited("digits-worker-1", 137);
  Reconcile();
  const json status = Job()["status"];
  EXPECT_EQ(status["restartCount"], 1) << status.dump();
  EXPECT_EQ(status["state"], "Restarting");
  EXPECT_EQ(ConditionOf("Restarting")["reason"], "FailurePolicyRestartJob");
  EXPECT_EQ(status["replicaStatuses"]["Worker"]["countedRestarts"], 1);
  ASSERT_TRUE(WaitFor([&] {
    Reconcile();  // a pod whose predecessor is still there is made by a later reconcile
    const std::map<std::string, json> pods = Pods();
    if (pods.size() != 4u) return false;
    for (const auto& [name, uid] : before) {
      if (!pods.contains(name) || pods.at(name)["metadata"]["uid"] == uid) return false;
    }
    return true;
  })) << "every pod replaced";
  AllRunning();
  Reconcile();
  EXPECT_EQ(State(), "Running");
  EXPECT_EQ(Job()["status"]["restartCount"], 1) << "the stopped pods' ends are not judged";
}

// The PS is given notice (DisruptionTarget while it still runs); the coordinator checkpoints and
// exits with the restart code. Its pod is deleted and no successor is made while the PS is there;
// when the PS ends, the PS and the coordinator are made again, nothing counted.
TEST_F(FailurePolicyIntegrationTest, ACoordinatorIsReplacedOnlyAfterThePsGivenNoticeHasEnded) {
  CreateJob();
  Reconcile();
  AllRunning();
  SetRunning("digits-coordinator-0", "127.0.0.45");
  Reconcile();
  const json disruption = json::array({{{"type", "DisruptionTarget"},
                                        {"status", "True"},
                                        {"reason", "PreemptionByScheduler"},
                                        {"lastTransitionTime", v1alpha1::FormatKubernetesTime(absl::Now())},
                                        {"message", "preempted"}}});
  Patch("digits-ps-0", {{"conditions", disruption}});
  Reconcile();
  ASSERT_EQ(notifier_.notices().size(), 1u);
  const std::string old_coordinator = Uid("digits-coordinator-0");

  SetExited("digits-coordinator-0", 42);  // the preemption checkpoint is saved; restart code
  Reconcile();
  EXPECT_FALSE(Pods().contains("digits-coordinator-0")) << "no coordinator beside the noticed PS";
  Reconcile();
  Reconcile();
  EXPECT_FALSE(Pods().contains("digits-coordinator-0"));
  json status = Job()["status"];
  EXPECT_EQ(status["state"], "Restarting");
  EXPECT_EQ(ConditionOf("Restarting")["reason"], "WaitingForReplacement");
  EXPECT_THAT(ConditionOf("Restarting")["message"].get<std::string>(),
              HasSubstr("coordinator 0 waits for ps 0"));

  SetExited("digits-ps-0", 143, disruption);  // the end of its notice
  ASSERT_TRUE(WaitFor([&] {
    Reconcile();
    const std::map<std::string, json> pods = Pods();
    return pods.contains("digits-coordinator-0") && pods.contains("digits-ps-0") &&
           !pods.at("digits-ps-0")["status"].contains("containerStatuses");
  })) << "the PS and then the coordinator are made again";
  EXPECT_NE(Uid("digits-coordinator-0"), old_coordinator);
  status = Job()["status"];
  EXPECT_EQ(status["restartCount"], 0) << status.dump();
  EXPECT_EQ(status["coordinatorRestarts"], 1) << "one PS preemption, one coordinator restart";
  EXPECT_EQ(status["replicaStatuses"]["PS"]["restarts"], 1);
}

}  // namespace
}  // namespace tj::op::testing
