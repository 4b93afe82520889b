// stuck_pods.h: which pending pods cannot start on their own, read from the pod as the scheduler
// and kubelet write it; and the job's judgement over its pods, with and without a pending timeout.
#include "operator/controller/stuck_pods.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/controller/observed_pod.h"

namespace tj::op {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

json PendingPod(json status_extra = json::object()) {
  json status = {{"phase", "Pending"}};
  status.update(status_extra);
  return {{"metadata", {{"name", "digits-ps-0"}}}, {"status", status}};
}

json Waiting(const std::string& reason, const std::string& list = "containerStatuses") {
  return {{list,
           {{{"name", "trainer"},
             {"state", {{"waiting", {{"reason", reason}, {"message", "pull access denied"}}}}}}}}};
}

TEST(PodStuckReasonTest, ReadsWhatTheSchedulerAndKubeletSay) {
  struct Case {
    std::string name;
    json pod;
    std::string reason;  // empty: not stuck
  };
  const json unschedulable = {
      {"conditions",
       {{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"},
         {"message", "0/3 nodes are available: 3 node(s) didn't match node selector"}}}}};
  const json scheduling_gated = {
      {"conditions",
       {{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "SchedulingGated"}}}}};
  json running = PendingPod(Waiting("ErrImagePull"));
  running["status"]["phase"] = "Running";
  const std::vector<Case> cases = {
      {"Unschedulable", PendingPod(unschedulable), "Unschedulable"},
      {"ErrImagePull", PendingPod(Waiting("ErrImagePull")), "ErrImagePull"},
      {"ImagePullBackOff", PendingPod(Waiting("ImagePullBackOff")), "ImagePullBackOff"},
      {"InvalidImageName", PendingPod(Waiting("InvalidImageName")), "InvalidImageName"},
      {"CreateContainerError", PendingPod(Waiting("CreateContainerError")), "CreateContainerError"},
      {"InitContainerConfig",
       PendingPod(Waiting("CreateContainerConfigError", "initContainerStatuses")),
       "CreateContainerConfigError"},
      {"PullingIsOnItsWay", PendingPod(Waiting("ContainerCreating")), ""},
      {"GatedIsWaitingForSomeone", PendingPod(scheduling_gated), ""},
      {"JustCreated", PendingPod(), ""},
      {"NoStatusAtAll", json{{"metadata", {{"name", "x"}}}}, ""},
      {"RunningIsNotPending", running, ""},
      {"MalformedStatuses", PendingPod({{"containerStatuses", "oops"}, {"conditions", 7}}), ""},
  };
  for (const Case& c : cases) {
    std::optional<PodStuck> stuck = PodStuckReason(c.pod);
    EXPECT_EQ(stuck ? stuck->reason : "", c.reason) << c.name;
  }
  EXPECT_THAT(PodStuckReason(PendingPod(unschedulable))->message,
              HasSubstr("didn't match node selector"));
  EXPECT_EQ(PodStuckReason(PendingPod(Waiting("ErrImagePull")))->message,
            "container trainer: pull access denied");
}

ObservedPod Stuck(ReplicaKey key, const std::string& name, const std::string& reason,
                  absl::Time created) {
  ObservedPod pod;
  pod.key = key;
  pod.name = name;
  pod.phase = ReplicaPhase::kPending;
  pod.created_at = created;
  pod.stuck = PodStuck{reason, "why"};
  return pod;
}

class JudgeStuckPodsTest : public ::testing::Test {
 protected:
  const absl::Time t0_ = absl::FromUnixSeconds(1'800'000'000);
  const ObservedPod worker_ =
      Stuck({ReplicaType::kWorker, 1}, "digits-worker-1", "ErrImagePull", t0_);
  const ObservedPod ps_ =
      Stuck({ReplicaType::kPs, 0}, "digits-ps-0", "Unschedulable", t0_ + absl::Seconds(30));
};

TEST_F(JudgeStuckPodsTest, NothingStuckIsNoJudgement) {
  ObservedPod on_its_way = ps_;
  on_its_way.stuck.reset();
  ObservedPod being_deleted = ps_;
  being_deleted.deletion_deadline = t0_;
  EXPECT_FALSE(JudgeStuckPods({on_its_way, being_deleted}, t0_, absl::Seconds(1)).has_value());
}

TEST_F(JudgeStuckPodsTest, NamesEveryPodAndTakesTheFirstReplicasReason) {
  std::optional<StuckJudgement> j = JudgeStuckPods({worker_, ps_}, t0_ + absl::Minutes(1), {});
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->reason, "Unschedulable") << "the PS comes before the workers";
  EXPECT_EQ(j->message,
            "pods cannot start: digits-ps-0: Unschedulable (why); digits-worker-1: ErrImagePull "
            "(why)");
  EXPECT_FALSE(j->timed_out) << "no timeout: the job waits";
  EXPECT_FALSE(j->time_left.has_value());
}

TEST_F(JudgeStuckPodsTest, AThousandStuckWorkersAreCountedNotListed) {
  std::vector<ObservedPod> pods;
  for (int i = 0; i < 1000; ++i) {
    pods.push_back(Stuck({ReplicaType::kWorker, i}, absl::StrCat("digits-worker-", i),
                         "Unschedulable", t0_ + absl::Seconds(i)));
  }
  std::optional<StuckJudgement> j = JudgeStuckPods(pods, t0_ + absl::Hours(1), absl::Hours(1));
  ASSERT_TRUE(j.has_value());
  EXPECT_THAT(j->message, HasSubstr("digits-worker-4: Unschedulable (why); and 995 more"));
  EXPECT_THAT(j->message, ::testing::Not(HasSubstr("digits-worker-5:")));
  EXPECT_LT(j->message.size(), 400u);
  EXPECT_TRUE(j->timed_out) << "the oldest of all counts, named or not";
}

TEST_F(JudgeStuckPodsTest, TheTimeoutCountsFromTheOldestStuckPodsCreation) {
  const absl::Duration timeout = absl::Minutes(10);
  std::optional<StuckJudgement> early = JudgeStuckPods({ps_, worker_}, t0_ + absl::Minutes(4),
                                                       timeout);
  ASSERT_TRUE(early.has_value());
  EXPECT_FALSE(early->timed_out);
  EXPECT_EQ(early->time_left, absl::Minutes(6)) << "from the worker's creation, the oldest";
  std::optional<StuckJudgement> due = JudgeStuckPods({ps_, worker_}, t0_ + timeout, timeout);
  ASSERT_TRUE(due.has_value());
  EXPECT_TRUE(due->timed_out);
  EXPECT_FALSE(due->time_left.has_value());
}

}  // namespace
}  // namespace tj::op
