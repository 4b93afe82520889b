// NoticesStep over fakes: each preemption signal reaches the running coordinator once, with the
// job's token and the pod's deadline; a signal with no coordinator to hear it still counts; a
// scale-down notice is neither a preemption nor a PS disruption; a deleted pod is forgotten.
#include "operator/controller/reconciler_notices.h"

#include <functional>

#include "absl/time/civil_time.h"
#include "tests/operator/controller/reconcile_step_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::IsEmpty;
using ::testing::SizeIs;

class NoticesStepTest : public StepTest {
 public:  // the table's arrangements reach the pods
  void SetUp() override {
    SetJob();
    AllRunning();
    view_.nodes["node-a"] = {{"metadata", {{"name", "node-a"}}},
                             {"status", {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
  }
  nlohmann::json& PodNamed(const std::string& name) {
    for (nlohmann::json& pod : view_.pods) {
      if (pod["metadata"]["name"] == name) return pod;
    }
    ADD_FAILURE() << name;
    return view_.pods.front();
  }
  JobReconcile WithToken() {
    JobReconcile r = Reconcile();
    r.token = "job-token";
    return r;
  }
  NoticesStep step_{view_, notifier_, events_, counting_, nullptr};
};

struct SignalCase {
  std::string name;
  std::function<void(NoticesStepTest&, FakeClusterView&)> arrange;
  std::string reason;  // the notice's; "" for none
};

TEST_F(NoticesStepTest, EachSignalReachesTheCoordinatorOnceWithTheTokenAndDeadline) {
  const std::vector<SignalCase> cases = {
      {"disruption", [](NoticesStepTest& t, FakeClusterView&) {
         t.PodNamed("digits-worker-0")["status"]["conditions"].push_back(
             {{"type", "DisruptionTarget"}, {"status", "True"}, {"reason", "PreemptionByScheduler"}});
       }, "DisruptionTarget/PreemptionByScheduler"},
      {"deletion", [](NoticesStepTest& t, FakeClusterView&) {
         t.PodNamed("digits-worker-0")["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:30Z";
       }, "Deleted"},
      {"node not ready", [](NoticesStepTest&, FakeClusterView& view) {
         view.nodes["node-a"]["status"]["conditions"][0]["status"] = "False";
       }, "NodeNotReady"},
      {"node gone", [](NoticesStepTest&, FakeClusterView& view) { view.nodes.clear(); },
       "NodeGone"},
      {"node unknown", [](NoticesStepTest&, FakeClusterView& view) {
         view.nodes.clear();
         view.nodes_known = false;
       }, ""},
      {"healthy", [](NoticesStepTest&, FakeClusterView&) {}, ""},
  };
  for (const SignalCase& c : cases) {
    SCOPED_TRACE(c.name);
    view_.pods.clear();
    SetUp();
    RecordingNotifier fresh;
    NoticesStep counted(view_, fresh, events_, counting_, nullptr);
    c.arrange(*this, view_);
    JobReconcile r = WithToken();
    counted.Run(r);
    if (c.reason.empty()) {
      EXPECT_THAT(fresh.notices(), IsEmpty());
      EXPECT_EQ(r.new_preemptions, 0);
      continue;
    }
    ASSERT_FALSE(fresh.notices().empty());
    const PreemptionNotice notice = fresh.notices()[0];
    EXPECT_EQ(notice.reason, c.reason);
    EXPECT_EQ(notice.coordinator_address, "10.0.0.5:2222");
    EXPECT_EQ(notice.token, "job-token");
    EXPECT_EQ(notice.job, "ml/digits");
    EXPECT_GT(r.new_preemptions, 0);
    JobReconcile again = WithToken();
    counted.Run(again);
    EXPECT_EQ(again.new_preemptions, 0) << "each pod and signal counts once";
    EXPECT_EQ(fresh.notices().size(), static_cast<size_t>(r.new_preemptions));
  }
}

TEST_F(NoticesStepTest, TheDeadlineIsTheDeletionTimestampElseNowPlusTheTemplatesGrace) {
  PodNamed("digits-ps-0")["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:30Z";
  PodNamed("digits-coordinator-0")["status"]["conditions"].push_back(
      {{"type", "DisruptionTarget"}, {"status", "True"}, {"reason", "EvictionByEvictionAPI"}});
  JobReconcile r = WithToken();
  step_.Run(r);
  ASSERT_THAT(notifier_.notices(), SizeIs(2));
  for (const PreemptionNotice& n : notifier_.notices()) {
    if (n.task_type == "ps") {
      EXPECT_EQ(n.deadline, absl::FromCivil(absl::CivilSecond(2027, 1, 15, 8, 0, 30),
                                            absl::UTCTimeZone()))
          << "the deletion timestamp, already now + grace";
    } else {
      EXPECT_EQ(n.deadline, now_ + absl::Seconds(20)) << "the coordinator template's grace";
    }
  }
}

TEST_F(NoticesStepTest, WithoutARunningCoordinatorTheSignalCountsButNoNoticeGoes) {
  PodNamed("digits-coordinator-0")["status"] = kubelet::ExitedPodStatus(1);
  PodNamed("digits-worker-1")["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:30Z";
  JobReconcile r = WithToken();
  step_.Run(r);
  EXPECT_EQ(r.new_preemptions, 1);
  EXPECT_THAT(notifier_.notices(), IsEmpty());
}

// A pod the operator deletes itself (a held job's, here after a Kueue eviction) is no disruption:
// the coordinator still hears of it, but status.preemptions does not count it, however many of
// the job's pods a reconcile happens to see Terminating (it counted 0 to 3 in the e2e).
TEST_F(NoticesStepTest, APodTheOperatorDeletesIsNotAPreemption) {
  JobReconcile before = WithToken();
  for (const ObservedPod& pod : before.pods) {
    if (pod.name == "digits-ps-0" || pod.name == "digits-worker-1") step_.DeletingPod(pod.uid);
  }
  PodNamed("digits-ps-0")["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:30Z";
  PodNamed("digits-worker-1")["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:30Z";
  JobReconcile r = WithToken();
  step_.Run(r);
  EXPECT_EQ(r.new_preemptions, 0);
  EXPECT_THAT(notifier_.notices(), SizeIs(2)) << "the coordinator is still told";

  // A pod the operator did not delete still counts.
  PodNamed("digits-worker-0")["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:30Z";
  JobReconcile next = WithToken();
  step_.Run(next);
  EXPECT_EQ(next.new_preemptions, 1);
}

TEST_F(NoticesStepTest, AScaleDownNoticeIsNeitherAPreemptionNorAPsDisruption) {
  JobReconcile r = WithToken();
  step_.NotifyScaleDown(r, r.pods.back());
  step_.NotifyScaleDown(r, r.pods.back());
  ASSERT_THAT(notifier_.notices(), SizeIs(1)) << "once per pod";
  EXPECT_EQ(notifier_.notices()[0].reason, kScaleDownNoticeReason);
  EXPECT_EQ(counting_.Snapshot().notices_queued, 1);
  EXPECT_EQ(step_.LastPsDisruption(r), absl::InfinitePast());
  step_.Run(r);
  EXPECT_EQ(r.new_preemptions, 0);
}

TEST_F(NoticesStepTest, ADisruptedPsIsRememberedOnTheOperatorsClock) {
  JobReconcile r = WithToken();
  EXPECT_EQ(step_.LastPsDisruption(r), absl::InfinitePast());
  PodNamed("digits-ps-0")["status"]["conditions"].push_back(
      {{"type", "DisruptionTarget"}, {"status", "True"}, {"reason", "PreemptionByScheduler"}});
  JobReconcile disrupted = WithToken();
  step_.Run(disrupted);
  EXPECT_EQ(step_.LastPsDisruption(disrupted), now_);
  step_.Forget("ml/digits");
  EXPECT_EQ(step_.LastPsDisruption(r), absl::InfinitePast());
}

TEST_F(NoticesStepTest, ADeletedPodsSignalsAreForgotten) {
  PodNamed("digits-worker-0")["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:30Z";
  JobReconcile r = WithToken();
  step_.Run(r);
  step_.PodDeleted("uid-digits-worker-0");
  JobReconcile again = WithToken();
  step_.Run(again);
  EXPECT_THAT(notifier_.notices(), SizeIs(2)) << "a pod of that UID seen again is notified again";
}

}  // namespace
}  // namespace tj::op::testing
