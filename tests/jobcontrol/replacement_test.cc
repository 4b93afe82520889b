// replacementPolicy and the coordinator's wait for a PS given notice (jobcontrol/replacement.h),
// alone and through DecideJobPhase: one PS preemption must cost one coordinator restart.
#include "jobcontrol/replacement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "jobcontrol/job_phase.h"
#include "tests/jobcontrol/terminations.h"
#include "tests/jobcontrol/test_jobs.h"

namespace tj {
namespace {

using ::testing::HasSubstr;
using v1alpha1::ReplacementPolicy;

constexpr ReplicaKey kCoord{ReplicaType::kCoordinator, 0};
constexpr ReplicaKey kPs0{ReplicaType::kPs, 0};
constexpr ReplicaKey kPs1{ReplicaType::kPs, 1};
constexpr ReplicaKey kW0{ReplicaType::kWorker, 0};
constexpr ReplicaKey kW1{ReplicaType::kWorker, 1};

std::vector<ReplicaKey> HeldKeys(const std::vector<ReplacementHold>& holds) {
  std::vector<ReplicaKey> out;
  for (const ReplacementHold& h : holds) out.push_back(h.replica);
  return out;
}

TEST(ReplacementPolicyTest, DefaultsAreFailedForCoordinatorAndPsAndTerminatingOrFailedForWorkers) {
  v1alpha1::TrainingJob job = testing_jobs::SmallJob();
  EXPECT_EQ(ReplacementPolicyFor(job, ReplicaType::kCoordinator), ReplacementPolicy::kFailed);
  EXPECT_EQ(ReplacementPolicyFor(job, ReplicaType::kPs), ReplacementPolicy::kFailed);
  EXPECT_EQ(ReplacementPolicyFor(job, ReplicaType::kWorker),
            ReplacementPolicy::kTerminatingOrFailed);
  job.spec.replica_specs[ReplicaType::kWorker].replacement_policy = ReplacementPolicy::kFailed;
  job.spec.replica_specs[ReplicaType::kPs].replacement_policy =
      ReplacementPolicy::kTerminatingOrFailed;
  EXPECT_EQ(ReplacementPolicyFor(job, ReplicaType::kWorker), ReplacementPolicy::kFailed);
  EXPECT_EQ(ReplacementPolicyFor(job, ReplicaType::kPs), ReplacementPolicy::kTerminatingOrFailed);
}

struct HoldCase {
  std::string name;
  std::optional<ReplacementPolicy> coordinator_policy;
  std::optional<ReplacementPolicy> ps_policy;
  std::optional<ReplacementPolicy> worker_policy;
  std::set<ReplicaKey> terminating;
  std::vector<ReplicaKey> starting;
  std::vector<ReplicaKey> held;
};

class HeldReplacementsTest : public ::testing::TestWithParam<HoldCase> {};

TEST_P(HeldReplacementsTest, Holds) {
  const HoldCase& c = GetParam();
  v1alpha1::TrainingJob job = testing_jobs::SmallJob(/*ps=*/2, /*workers=*/2);
  job.spec.replica_specs[ReplicaType::kCoordinator].replacement_policy = c.coordinator_policy;
  job.spec.replica_specs[ReplicaType::kPs].replacement_policy = c.ps_policy;
  job.spec.replica_specs[ReplicaType::kWorker].replacement_policy = c.worker_policy;
  EXPECT_EQ(HeldKeys(HeldReplacements(job, c.terminating, c.starting)), c.held);
}

INSTANTIATE_TEST_SUITE_P(
    Table, HeldReplacementsTest,
    ::testing::Values(
        HoldCase{"NothingTerminatingHoldsNothing", {}, {}, {}, {}, {kCoord, kPs0, kW0}, {}},
        HoldCase{"CoordinatorWaitsForANoticedPs", {}, {}, {}, {kPs1}, {kCoord}, {kCoord}},
        HoldCase{"CoordinatorUnderTerminatingOrFailedDoesNotWait",
                 ReplacementPolicy::kTerminatingOrFailed, {}, {}, {kPs1}, {kCoord}, {}},
        HoldCase{"CoordinatorDoesNotWaitForATerminatingWorker", {}, {}, {}, {kW0}, {kCoord}, {}},
        HoldCase{"PsWaitsForItsOwnPredecessor", {}, {}, {}, {kPs0}, {kPs0, kPs1}, {kPs0}},
        HoldCase{"PsUnderTerminatingOrFailedDoesNotWait", {},
                 ReplacementPolicy::kTerminatingOrFailed, {}, {kPs0}, {kPs0}, {}},
        HoldCase{"WorkerByDefaultDoesNotWait", {}, {}, {}, {kW1}, {kW1}, {}},
        HoldCase{"WorkerUnderFailedWaitsForItsOwnPredecessorOnly", {}, {},
                 ReplacementPolicy::kFailed, {kW1, kPs0}, {kW0, kW1}, {kW1}},
        HoldCase{"OneHoldPerReplicaWhenTwoPsAreTerminating", {}, {}, {}, {kPs0, kPs1}, {kCoord},
                 {kCoord}}),
    [](const ::testing::TestParamInfo<HoldCase>& info) { return info.param.name; });

TEST(HeldReplacementsTest, TheHoldNamesTheReplicaWaitedFor) {
  const std::vector<ReplacementHold> holds =
      HeldReplacements(testing_jobs::SmallJob(), {kPs0}, {kCoord});
  ASSERT_EQ(holds.size(), 1u);
  EXPECT_EQ(holds[0].waits_for, kPs0);
  EXPECT_THAT(holds[0].message, HasSubstr("coordinator 0 waits for ps 0"));
}

ReplicaObservation Observed(ReplicaKey key, ReplicaPhase phase, Termination t = {}) {
  ReplicaObservation r;
  r.key = key;
  r.phase = phase;
  r.termination = t;
  return r;
}

// `tjctl preempt digits ps-0`: the coordinator checkpointed on the notice and exited with the
// restart code while ps 0, given notice, still runs. Its restart is decided (not counted), its
// new process or pod waits; once ps 0 has ended the coordinator may start with the new PS.
TEST(ReplacementDecisionTest, ACoordinatorRestartedForANoticedPsWaitsUntilThePsIsGone) {
  const v1alpha1::TrainingJob job = testing_jobs::SmallJob();
  JobObservation observed;
  observed.replicas = {Observed(kCoord, ReplicaPhase::kTerminated, testing::Disrupted(42)),
                       Observed(kPs0, ReplicaPhase::kRunning), Observed(kW0, ReplicaPhase::kRunning),
                       Observed(kW1, ReplicaPhase::kRunning)};
  observed.terminating = {kPs0};
  const JobDecision restart = DecideJobPhase(job, observed);
  EXPECT_EQ(restart.phase, JobPhase::kRestarting);
  EXPECT_EQ(restart.to_restart, std::vector<ReplicaKey>{kCoord});
  EXPECT_TRUE(restart.Held(kCoord));
  EXPECT_EQ(restart.restart_count, 0) << "a disruption is not counted";
  EXPECT_THAT(restart.message, HasSubstr("waits for ps 0"));

  // The old coordinator is gone (deleted by the restart), ps 0 still runs out its notice.
  observed.replicas[0] = Observed(kCoord, ReplicaPhase::kMissing);
  const JobDecision waiting = DecideJobPhase(job, observed);
  EXPECT_EQ(waiting.phase, JobPhase::kRestarting);
  EXPECT_EQ(waiting.reason, "WaitingForReplacement");
  EXPECT_TRUE(waiting.to_create.empty()) << "no coordinator while its PS is about to go";
  EXPECT_TRUE(waiting.to_restart.empty());

  // ps 0 ended (preempted): it restarts, and the coordinator is created beside it.
  observed.replicas[1] = Observed(kPs0, ReplicaPhase::kTerminated, testing::Disrupted(143));
  observed.terminating.clear();
  const JobDecision replaced = DecideJobPhase(job, observed);
  EXPECT_EQ(replaced.to_restart, std::vector<ReplicaKey>{kPs0});
  EXPECT_EQ(replaced.to_create, std::vector<ReplicaKey>{kCoord});
  EXPECT_TRUE(replaced.held.empty());
  EXPECT_EQ(replaced.restart_count, 0);
}

TEST(ReplacementDecisionTest, ARunningJobWithAHeldWorkerStaysRunningAndSaysWhy) {
  v1alpha1::TrainingJob job = testing_jobs::SmallJob();
  job.spec.replica_specs[ReplicaType::kWorker].replacement_policy = ReplacementPolicy::kFailed;
  JobObservation observed;
  observed.replicas = {Observed(kCoord, ReplicaPhase::kRunning),
                       Observed(kPs0, ReplicaPhase::kRunning),
                       Observed(kW0, ReplicaPhase::kRunning)};  // worker 1 missing
  observed.terminating = {kW1};
  const JobDecision d = DecideJobPhase(job, observed);
  EXPECT_EQ(d.phase, JobPhase::kRunning);
  EXPECT_TRUE(d.to_create.empty());
  EXPECT_THAT(d.message, HasSubstr("worker 1 waits for its predecessor"));
}

TEST(ReplacementDecisionTest, ASuspendedJobHoldsNothing) {
  v1alpha1::TrainingJob job = testing_jobs::SmallJob();
  job.spec.run_policy.suspend = true;
  JobObservation observed;
  observed.replicas = {Observed(kPs0, ReplicaPhase::kRunning)};
  observed.terminating = {kPs0};
  const JobDecision d = DecideJobPhase(job, observed);
  EXPECT_EQ(d.phase, JobPhase::kSuspended);
  EXPECT_TRUE(d.held.empty());
}

}  // namespace
}  // namespace tj
