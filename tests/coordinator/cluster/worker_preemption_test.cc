// A preemption notice for a worker (ClusterCoordinator::PreemptWorker): it takes no new closures,
// its running closure finishes if it can before the deadline or runs again elsewhere, and it takes
// work again once its replacement process answers. Real worker processes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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

int MarkerWorker(const std::string& marker) {
  std::ifstream in(marker);
  int worker = -1;
  in >> worker;
  return worker;
}

// Starts a sleep(ms) closure and returns it with the worker it runs on.
std::pair<RemoteValue, int> StartSleeper(ClusterCoordinator& coordinator, int ms,
                                         const std::string& name) {
  const std::string marker = MarkerPath(name);
  std::filesystem::remove(marker);
  auto value = coordinator.Schedule("sleep", {ms, marker});
  EXPECT_TRUE(value.ok());
  EXPECT_TRUE(WaitFor([&] { return std::filesystem::exists(marker) && MarkerWorker(marker) >= 0; }));
  const int worker = MarkerWorker(marker);
  std::filesystem::remove(marker);
  return {*value, worker};
}

TEST(WorkerPreemptionTest, ThePreemptedWorkerFinishesItsClosureAndTakesNoMore) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  auto [sleeper, victim] = StartSleeper(**coordinator, 600, "preempt-finish");

  ASSERT_TRUE((*coordinator)->PreemptWorker(victim, absl::Now() + absl::Seconds(30)).ok());
  std::vector<RemoteValue> others;
  for (int i = 0; i < 40; ++i) others.push_back(*(*coordinator)->Schedule("worker_index"));
  ASSERT_TRUE((*coordinator)->Join().ok());
  for (const RemoteValue& value : others) EXPECT_EQ(value.Fetch()->int_value(), 1 - victim);
  EXPECT_EQ(sleeper.Fetch()->int_value(), victim) << "finished where it ran, before the deadline";
  const auto stats = (*coordinator)->Workers();
  EXPECT_EQ(stats[static_cast<size_t>(victim)].state, WorkerState::kPreempted);
  EXPECT_EQ(stats[static_cast<size_t>(victim)].put_back, 0);
  EXPECT_EQ((*coordinator)->PreemptWorker(7, absl::Now()).code(), absl::StatusCode::kNotFound);
}

TEST(WorkerPreemptionTest, AClosureStillRunningAtTheDeadlineRunsAgainElsewhere) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  auto [sleeper, victim] = StartSleeper(**coordinator, 1500, "preempt-deadline");

  ASSERT_TRUE((*coordinator)->PreemptWorker(victim, absl::Now() + absl::Milliseconds(200)).ok());
  ASSERT_TRUE((*coordinator)->Join().ok());
  EXPECT_EQ(sleeper.Fetch()->int_value(), 1 - victim);
  EXPECT_GE((*coordinator)->Workers()[static_cast<size_t>(victim)].put_back, 1);
}

TEST(WorkerPreemptionTest, TheWorkerTakesWorkAgainWhenItsReplacementAnswers) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  const int victim = 0;
  ASSERT_TRUE((*coordinator)->PreemptWorker(victim, absl::Now() + absl::Seconds(1)).ok());
  ASSERT_TRUE(WaitFor([&] {
    return (*coordinator)->Workers()[victim].state == WorkerState::kPreempted;
  }));
  // The platform terminates it and starts a replacement on the same address.
  cluster.KillWorker(victim);
  ASSERT_TRUE(cluster.StartWorker(victim).ok());
  // Sleepers long enough that one worker alone cannot take them all.
  ASSERT_TRUE(WaitFor(
      [&] {
        std::vector<RemoteValue> batch;
        for (int i = 0; i < 4; ++i) batch.push_back(*(*coordinator)->Schedule("sleep", {50}));
        bool ran_on_victim = false;
        for (const RemoteValue& value : batch) ran_on_victim |= value.Fetch()->int_value() == victim;
        return ran_on_victim;
      },
      absl::Seconds(30)));
  EXPECT_EQ((*coordinator)->Workers()[victim].state, WorkerState::kHealthy);
}

}  // namespace
}  // namespace tj
