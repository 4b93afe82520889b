// The coordinator's own counters (ClusterCoordinator::Counters, exported as tj_coordinator_* and
// tj_worker_* metrics) against real tj-worker and tj-ps processes: each closure is counted once
// from Schedule to its end, and a killed worker or PS shows up as exactly as many retries, errors
// and state changes as the closures and connections went through.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>

#include "coordinator/cluster/cluster_coordinator.h"
#include "tests/coordinator/cluster/coordinator_test_util.h"
#include "tests/coordinator/cluster/local_cluster.h"
#include "tests/support/wait_for.h"

namespace tj {
namespace {

using testing::FastOptions;
using testing::LocalCluster;
using testing::MarkerPath;
using testing::WaitFor;

uint64_t Changes(const CoordinatorCounters& c, WorkerState state) {
  return c.state_changes[static_cast<size_t>(state)];
}

int64_t Sum(const std::vector<WorkerStats>& workers, int64_t WorkerStats::*field) {
  int64_t sum = 0;
  for (const WorkerStats& w : workers) sum += w.*field;
  return sum;
}

TEST(CoordinatorCountersTest, EveryClosureIsCountedOnceFromScheduleToItsEnd) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  // Both connections first: a loaded machine can run all 500 closures on worker 0 before worker
  // 1's connection is up, and that connection's change to healthy would then come after Join.
  ASSERT_TRUE(
      WaitFor([&] { return Changes((*coordinator)->Counters(), WorkerState::kHealthy) == 2; }));
  for (int i = 0; i < 500; ++i) ASSERT_TRUE((*coordinator)->Schedule("noop").ok());
  ASSERT_TRUE((*coordinator)->Join().ok());
  const CoordinatorCounters c = (*coordinator)->Counters();
  EXPECT_EQ(c.closures.scheduled, 500u);
  EXPECT_EQ(c.closures.completed, 500u);
  EXPECT_EQ(c.closures.failed, 0u);
  EXPECT_EQ(c.closures.retried, 0u);
  EXPECT_EQ(c.closures.cancelled, 0u);
  EXPECT_EQ(c.queued, 0u);
  EXPECT_EQ(c.inflight, 0u);
  EXPECT_EQ(Sum(c.workers, &WorkerStats::completed), 500);
  EXPECT_EQ(Sum(c.workers, &WorkerStats::errors), 0);
  EXPECT_EQ(Changes(c, WorkerState::kHealthy), 2u) << "each connection became healthy once";
  EXPECT_EQ(Changes(c, WorkerState::kRecovering), 0u);
  for (const WorkerStats& w : c.workers) {
    EXPECT_EQ(w.away, absl::ZeroDuration()) << "worker " << w.index;
    EXPECT_EQ(w.rerun, absl::ZeroDuration()) << "worker " << w.index;
  }
}

TEST(CoordinatorCountersTest, AFailedClosureCancelsTheQueuedOnesAndEachIsCounted) {
  LocalCluster cluster(1, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  const std::string marker = MarkerPath("counters-long");
  auto long_one = (*coordinator)->Schedule("sleep", {300, marker});
  ASSERT_TRUE(long_one.ok());
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(marker); }));
  // One worker, busy: the failing closure and the ten after it queue behind the long one.
  ASSERT_TRUE((*coordinator)->Schedule("fail", {"the failure"}).ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE((*coordinator)->Schedule("noop").ok());
  EXPECT_EQ((*coordinator)->Join().message(), "the failure");
  const CoordinatorCounters c = (*coordinator)->Counters();
  EXPECT_EQ(c.closures.scheduled, 12u);
  EXPECT_EQ(c.closures.failed, 1u);
  EXPECT_EQ(c.workers[0].errors, 1);
  // The worker runs in order: the long one finished before the failure; the noops behind it ran
  // (sent in the same window) or were cancelled.
  EXPECT_GE(c.closures.completed, 1u);
  EXPECT_EQ(c.closures.completed + c.closures.failed + c.closures.cancelled, 12u);
  EXPECT_EQ(c.closures.completed, static_cast<uint64_t>(c.workers[0].completed));
  EXPECT_EQ(c.queued, 0u);
  EXPECT_EQ(c.inflight, 0u);
}

TEST(CoordinatorCountersTest, AKilledWorkersClosuresCountAsRetriesExactly) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  const std::string marker = MarkerPath("counters-victim");
  auto victim = (*coordinator)->Schedule("sleep", {1000, marker});
  ASSERT_TRUE(victim.ok());
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(marker); }));
  int first = -1;
  std::ifstream(marker) >> first;
  ASSERT_TRUE(first == 0 || first == 1);
  for (int i = 0; i < 50; ++i) ASSERT_TRUE((*coordinator)->Schedule("noop").ok());
  cluster.KillWorker(first);
  ASSERT_TRUE((*coordinator)->Join().ok());
  const CoordinatorCounters c = (*coordinator)->Counters();
  const int64_t put_back = Sum(c.workers, &WorkerStats::put_back);
  EXPECT_GE(put_back, 1) << "the sleeping closure at least";
  EXPECT_EQ(c.closures.retried, static_cast<uint64_t>(put_back));
  EXPECT_EQ(c.closures.scheduled, 51u);
  EXPECT_EQ(c.closures.completed, 51u) << "every closure ended once, retries included";
  EXPECT_EQ(c.closures.cancelled, 0u);
  EXPECT_EQ(Changes(c, WorkerState::kRecovering), 1u) << "the killed worker's connection";
  EXPECT_EQ(c.workers[static_cast<size_t>(first)].state, WorkerState::kRecovering);
}

// Goodput's worker figures (WorkerStats::away and rerun): the killed worker had been running the
// sleeping closure since before its marker appeared, and nothing answered after that, so the
// work lost is at least the time from the marker to the kill; it is away from the kill on, and the
// survivor is neither.
TEST(CoordinatorCountersTest, AKilledWorkersLostWorkAndTimeAwayAreMeasured) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  const std::string marker = MarkerPath("counters-goodput");
  ASSERT_TRUE((*coordinator)->Schedule("sleep", {5000, marker}).ok());
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(marker); }));
  const absl::Time marker_seen = absl::Now();
  int first = -1;
  std::ifstream(marker) >> first;
  ASSERT_TRUE(first == 0 || first == 1);
  const int survivor = 1 - first;
  ASSERT_TRUE(WaitFor([&] { return absl::Now() - marker_seen > absl::Milliseconds(200); }));
  const absl::Time killed = absl::Now();
  cluster.KillWorker(first);
  // The put-back closure runs again on the survivor, a 5 s sleep: wait for the put-back only, and
  // for time away to show (the put-back can be read at the very instant the worker went away,
  // with nothing of that time elapsed yet: seen once under load).
  ASSERT_TRUE(WaitFor([&] {
    const WorkerStats w = (*coordinator)->Workers()[static_cast<size_t>(first)];
    return w.put_back >= 1 && w.away > absl::ZeroDuration();
  })) << "a killed worker whose closure was put back is counted away";
  const WorkerStats victim = (*coordinator)->Workers()[static_cast<size_t>(first)];
  EXPECT_GE(victim.rerun, killed - marker_seen);
  ASSERT_TRUE(WaitFor([&] {
    return (*coordinator)->Workers()[static_cast<size_t>(first)].away > victim.away;
  })) << "still away: the figure grows while it is";
  const WorkerStats other = (*coordinator)->Workers()[static_cast<size_t>(survivor)];
  EXPECT_EQ(other.away, absl::ZeroDuration());
  EXPECT_EQ(other.rerun, absl::ZeroDuration());
}

TEST(CoordinatorCountersTest, PsErrorsAreCountedByTaskAndTheOneAtTheThresholdAsAFailure) {
  LocalCluster cluster(1, 2);
  ASSERT_TRUE(cluster.StartAll().ok());
  CoordinatorOptions options = FastOptions();
  options.transient_ps_failure_threshold = 3;
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), options);
  ASSERT_TRUE(coordinator.ok());
  cluster.KillPs(1);
  auto v = (*coordinator)->Schedule("ps_add", {1, "v", 1.0});
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(absl::IsUnavailable((*coordinator)->Join()));
  const CoordinatorCounters c = (*coordinator)->Counters();
  ASSERT_EQ(c.ps_errors.count(1), 1u);
  EXPECT_EQ(c.ps_errors.count(0), 0u) << "PS 0 answered";
  EXPECT_EQ(c.ps_errors.at(1).errors, 3);
  EXPECT_EQ(c.ps_errors.at(1).failures, 1);
  EXPECT_EQ(c.closures.retried, 2u) << "the two errors below the threshold";
  EXPECT_EQ(c.closures.failed, 1u);
  EXPECT_EQ(c.workers[0].errors, 3) << "the worker ran it three times, each ending in an error";
}

}  // namespace
}  // namespace tj
