// Schedule's idle path (CoordinatorOptions::direct_dispatch): a closure written to an idle worker
// from Schedule's own thread must behave exactly like one sent by the dispatch thread: put back and
// run again when its worker dies, cancelled when another closure fails, within the window.
#include <gtest/gtest.h>

#include <atomic>
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
using testing::WaitFor;

int64_t DirectCount(const ClusterCoordinator& coordinator) {
  int64_t direct = 0;
  for (const auto& w : coordinator.Workers()) direct += w.direct;
  return direct;
}

// Lone closures until one takes the direct path: right after Create, the streams may not be up yet.
bool WaitUntilDirectPathIsUsed(ClusterCoordinator& coordinator) {
  return WaitFor([&] {
    auto v = coordinator.Schedule("add", {1, 1});
    if (!v.ok() || !v->Fetch().ok()) return false;
    return DirectCount(coordinator) > 0;
  });
}

TEST(DirectDispatchTest, LoneClosuresAreWrittenFromScheduleAndGiveTheirResults) {
  LocalCluster cluster(1, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  ASSERT_TRUE(WaitUntilDirectPathIsUsed(**coordinator));
  const int64_t before = DirectCount(**coordinator);
  for (int i = 0; i < 20; ++i) {
    auto v = (*coordinator)->Schedule("add", {i, 100});
    ASSERT_TRUE(v.ok()) << v.status();
    auto fetched = v->Fetch();
    ASSERT_TRUE(fetched.ok()) << fetched.status();
    EXPECT_EQ(fetched->int_value(), i + 100);
  }
  // Each of them found the worker idle (the previous one was fetched).
  EXPECT_EQ(DirectCount(**coordinator) - before, 20);
  ASSERT_TRUE((*coordinator)->Join().ok());
  EXPECT_EQ((*coordinator)->inflight(), 0u);
}

TEST(DirectDispatchTest, OffSendsEverythingThroughTheDispatchThread) {
  LocalCluster cluster(1, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  CoordinatorOptions options = FastOptions();
  options.direct_dispatch = false;
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), options);
  ASSERT_TRUE(coordinator.ok());
  for (int i = 0; i < 20; ++i) {
    auto v = (*coordinator)->Schedule("add", {i, 1});
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->Fetch()->int_value(), i + 1);
  }
  EXPECT_EQ(DirectCount(**coordinator), 0);
  EXPECT_EQ((*coordinator)->Workers()[0].completed, 20);
}

TEST(DirectDispatchTest, ADirectClosureIsPutBackAndRunsAgainWhenItsWorkerDies) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  ASSERT_TRUE(WaitUntilDirectPathIsUsed(**coordinator));
  const int64_t before = DirectCount(**coordinator);
  const std::string marker = MarkerPath("direct-victim");
  auto victim = (*coordinator)->Schedule("sleep", {1000, marker});
  ASSERT_TRUE(victim.ok());
  ASSERT_EQ(DirectCount(**coordinator), before + 1) << "the closure did not take the direct path";
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(marker); }));
  int first = -1;
  std::ifstream(marker) >> first;
  ASSERT_TRUE(first == 0 || first == 1);
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

TEST(DirectDispatchTest, ADirectClosureIsCancelledWhenAnotherOneFails) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  CoordinatorOptions options = FastOptions();
  // A worker runs one closure at a time: the failing one must go to the other worker.
  options.max_inflight_per_worker = 1;
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), options);
  ASSERT_TRUE(coordinator.ok());
  ASSERT_TRUE(WaitUntilDirectPathIsUsed(**coordinator));
  const int64_t before = DirectCount(**coordinator);
  const std::string marker = MarkerPath("direct-long");
  auto long_one = (*coordinator)->Schedule("sleep", {30'000, marker});
  ASSERT_TRUE(long_one.ok());
  ASSERT_EQ(DirectCount(**coordinator), before + 1) << "the closure did not take the direct path";
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(marker); }));
  auto failing = (*coordinator)->Schedule("fail", {"the failure"});
  ASSERT_TRUE(failing.ok());
  const absl::Time start = absl::Now();
  absl::Status joined = (*coordinator)->Join();
  EXPECT_EQ(joined.message(), "the failure");
  // Join waits for the long one: it returns early only if the long one was cancelled.
  EXPECT_LT(absl::Now() - start, absl::Seconds(20)) << "the long closure was not cancelled";
  EXPECT_EQ((*coordinator)->inflight(), 0u);
  EXPECT_TRUE(absl::IsCancelled(long_one->Fetch().status()));
  // The direct path works again afterwards.
  const int64_t after_error = DirectCount(**coordinator);
  auto later = (*coordinator)->Schedule("add", {2, 3});
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->Fetch()->int_value(), 5);
  EXPECT_EQ(DirectCount(**coordinator), after_error + 1);
}

TEST(DirectDispatchTest, TheWindowStaysAnUpperBoundNextToTheDirectPath) {
  LocalCluster cluster(1, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  CoordinatorOptions options = FastOptions();
  options.max_inflight_per_worker = 1;
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), options);
  ASSERT_TRUE(coordinator.ok());
  ASSERT_TRUE(WaitUntilDirectPathIsUsed(**coordinator));
  // The dispatch thread is parked waiting for closures with one free slot; the direct path takes
  // that slot, then more closures arrive: the dispatch thread must not send a second one.
  std::vector<RemoteValue> values;
  values.push_back(*(*coordinator)->Schedule("sleep", {100}));
  for (int i = 0; i < 5; ++i) values.push_back(*(*coordinator)->Schedule("sleep", {20}));
  std::atomic<bool> joined{false};
  std::thread join([&] {
    EXPECT_TRUE((*coordinator)->Join().ok());
    joined = true;
  });
  int64_t max_inflight = 0;
  while (!joined.load()) {
    max_inflight = std::max(max_inflight, (*coordinator)->Workers()[0].inflight);
    std::this_thread::yield();
  }
  join.join();
  EXPECT_EQ(max_inflight, 1);
  for (auto& v : values) EXPECT_TRUE(v.Fetch().ok());
}

}  // namespace
}  // namespace tj
