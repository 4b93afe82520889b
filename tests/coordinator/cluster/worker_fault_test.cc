// Worker failures with real processes killed for real (SIGKILL), after TensorFlow's fault-tolerance
// tests: closures are put back and run elsewhere, workers are waited for and their resources rebuilt.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "coordinator/cluster/cluster_coordinator.h"
#include "tests/coordinator/cluster/coordinator_test_util.h"
#include "tests/coordinator/cluster/local_cluster.h"
#include "tests/support/wait_for.h"

namespace tj {
namespace {

using testing::FastOptions;
using testing::LocalCluster;
using testing::MarkerPath;
using testing::ReadPsScalar;
using testing::WaitFor;

void ScheduleIncrements(ClusterCoordinator& coordinator, int n) {
  for (int i = 0; i < n; ++i) ASSERT_TRUE(coordinator.Schedule("ps_add", {0, "iteration", 1.0}).ok());
}

int WhereMarkerRan(const std::string& marker) {
  std::ifstream in(marker);
  int worker = -1;
  in >> worker;
  return worker;
}

TEST(WorkerFaultTest, WorkersKilledBetweenFunctionsCounterGoesExactlyTwoToFour) {
  LocalCluster cluster(2, 1);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  ScheduleIncrements(**coordinator, 2);
  ASSERT_TRUE((*coordinator)->Join().ok());
  EXPECT_EQ(ReadPsScalar(**coordinator, 0, "iteration"), 2.0);

  cluster.KillWorker(0);
  cluster.KillWorker(1);
  ScheduleIncrements(**coordinator, 2);  // queued while no worker is up
  ASSERT_TRUE(cluster.StartWorker(0).ok());
  ASSERT_TRUE(cluster.StartWorker(1).ok());
  ASSERT_TRUE((*coordinator)->Join().ok());
  EXPECT_EQ(ReadPsScalar(**coordinator, 0, "iteration"), 4.0);
}

TEST(WorkerFaultTest, WorkerKilledInTheMiddleOfAFunctionItRunsAgainElsewhere) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  const std::string marker = MarkerPath("mid-function");
  auto victim = (*coordinator)->Schedule("sleep", {1000, marker});
  ASSERT_TRUE(victim.ok());
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(marker); }));
  const int first = WhereMarkerRan(marker);
  std::filesystem::remove(marker);
  cluster.KillWorker(first);
  ASSERT_TRUE((*coordinator)->Join().ok());
  auto ran_on = victim->Fetch();
  ASSERT_TRUE(ran_on.ok()) << ran_on.status();
  EXPECT_EQ(ran_on->int_value(), 1 - first);
  const auto stats = (*coordinator)->Workers();
  EXPECT_EQ(stats[static_cast<size_t>(first)].failures, 1);
  EXPECT_GE(stats[static_cast<size_t>(first)].put_back, 1);
}

TEST(WorkerFaultTest, TwoWorkersKilledTheThirdFinishesEverything) {
  LocalCluster cluster(3, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  std::vector<RemoteValue> values;
  for (int i = 0; i < 60; ++i) values.push_back(*(*coordinator)->Schedule("sleep", {10}));
  cluster.KillWorker(0);
  cluster.KillWorker(1);
  ASSERT_TRUE((*coordinator)->Join().ok());
  for (auto& v : values) ASSERT_TRUE(v.Fetch().ok());
  auto last = (*coordinator)->Schedule("worker_index");
  EXPECT_EQ(last->Fetch()->int_value(), 2);
}

TEST(WorkerFaultTest, OneWorkerKilledRepeatedlyEveryClosureCompletes) {
  LocalCluster cluster(2, 1);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  for (int round = 0; round < 3; ++round) {
    std::vector<RemoteValue> values;
    for (int i = 0; i < 30; ++i) values.push_back(*(*coordinator)->Schedule("sleep", {5}));
    const std::string marker = MarkerPath("repeat-" + std::to_string(round));
    auto probe = (*coordinator)->Schedule("sleep", {200, marker});
    ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(marker); }));
    cluster.KillWorker(0);
    ASSERT_TRUE(cluster.StartWorker(0).ok());
    ASSERT_TRUE((*coordinator)->Join().ok());
    for (auto& v : values) ASSERT_TRUE(v.Fetch().ok());
    ASSERT_TRUE(probe->Fetch().ok());
  }
  EXPECT_TRUE(WaitFor([&] { return (*coordinator)->Workers()[0].state == WorkerState::kHealthy; }));
}

TEST(WorkerFaultTest, PerWorkerResourcesAreRebuiltAfterAWorkerRestart) {
  LocalCluster cluster(1, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  auto counters = (*coordinator)->CreatePerWorkerResource("counter", {10});
  ASSERT_TRUE(counters.ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*coordinator)->Schedule("counter_next", {*counters}).ok());
  ASSERT_TRUE((*coordinator)->Join().ok());
  const auto before = (*coordinator)->Workers()[0].incarnation;

  cluster.KillWorker(0);
  // The worker's resource died with it: its RemoteValue is ABORTED until the worker is back.
  RemoteValue worker0 = counters->values().at(0);
  ASSERT_TRUE(WaitFor([&] { return worker0.status() == RemoteValueStatus::kAborted; }));
  ASSERT_TRUE(cluster.StartWorker(0).ok());
  auto next = (*coordinator)->Schedule("counter_next", {*counters});
  ASSERT_TRUE(next.ok());
  auto pair = next->Fetch();
  ASSERT_TRUE(pair.ok()) << pair.status();
  // A fresh counter, built on the new process before it took work: it starts from 10 again.
  EXPECT_EQ(pair->list().values(1).int_value(), 10);
  EXPECT_EQ(worker0.status(), RemoteValueStatus::kReady);
  EXPECT_NE((*coordinator)->Workers()[0].incarnation, before);
}

TEST(WorkerFaultTest, FiveThousandClosuresCompleteWithAWorkerKilledAndRestartedMidway) {
  LocalCluster cluster(2, 1);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  std::vector<RemoteValue> values;
  values.reserve(5000);
  for (int i = 0; i < 5000; ++i) {
    auto v = (*coordinator)->Schedule("add", {i, 1});
    ASSERT_TRUE(v.ok());
    values.push_back(*v);
    if (i == 2500) {
      ASSERT_TRUE(WaitFor([&] { return (*coordinator)->Workers()[1].completed > 100; }));
      cluster.KillWorker(1);
    }
    if (i == 3500) {
      ASSERT_TRUE(cluster.StartWorker(1).ok());
    }
  }
  ASSERT_TRUE((*coordinator)->Join().ok());
  for (int i = 0; i < 5000; ++i) {
    auto v = values[static_cast<size_t>(i)].Fetch();
    ASSERT_TRUE(v.ok()) << i << ": " << v.status();
    ASSERT_EQ(v->int_value(), i + 1);
  }
  EXPECT_EQ((*coordinator)->Workers()[1].failures, 1);
}

}  // namespace
}  // namespace tj
