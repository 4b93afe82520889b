// ClusterCoordinator against real worker processes: scheduling, the error contract, bad input,
// per-worker resources, elastic membership, staggering and shutdown.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "coordinator/cluster/cluster_coordinator.h"
#include "coordinator/resolver/tf_config_cluster_resolver.h"
#include "tests/coordinator/cluster/coordinator_test_util.h"
#include "tests/coordinator/cluster/local_cluster.h"
#include "tests/support/wait_for.h"

namespace tj {
namespace {

using testing::FastOptions;
using ::testing::HasSubstr;
using testing::LocalCluster;
using testing::MarkerPath;
using testing::WaitFor;

TEST(CoordinatorTest, SchedulesOnEveryWorkerAndFetchesResults) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  std::vector<RemoteValue> sums;
  for (int i = 0; i < 200; ++i) {
    auto v = (*coordinator)->Schedule("add", {i, 1000});
    ASSERT_TRUE(v.ok()) << v.status();
    sums.push_back(*v);
  }
  ASSERT_TRUE((*coordinator)->Join().ok());
  EXPECT_TRUE(*(*coordinator)->Done());
  auto values = Fetch(sums);
  ASSERT_TRUE(values.ok()) << values.status();
  for (int i = 0; i < 200; ++i) EXPECT_EQ((*values)[static_cast<size_t>(i)].int_value(), i + 1000);
  int64_t completed = 0;
  for (const auto& w : (*coordinator)->Workers()) completed += w.completed;
  EXPECT_EQ(completed, 200);
}

TEST(CoordinatorTest, CreatesFromATfConfigResolver) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto resolver = TFConfigClusterResolver::FromJson(
      R"({"cluster":{"chief":["127.0.0.1:1"],"worker":[")" + cluster.worker_address(0) + R"(",")" +
      cluster.worker_address(1) + R"("]},"task":{"type":"chief","index":0}})");
  ASSERT_TRUE(resolver.ok()) << resolver.status();
  auto coordinator = ClusterCoordinator::Create(**resolver, FastOptions());
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  EXPECT_EQ((*coordinator)->Workers().size(), 2u);
  auto v = (*coordinator)->Schedule("worker_index");
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->Fetch().ok());
}

TEST(CoordinatorTest, UnknownFunctionIsRaisedByJoinNamingTheFunction) {
  LocalCluster cluster(1, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  auto v = (*coordinator)->Schedule("no_such_function");
  ASSERT_TRUE(v.ok());
  absl::Status joined = (*coordinator)->Join();
  EXPECT_TRUE(absl::IsNotFound(joined));
  EXPECT_THAT(std::string(joined.message()), HasSubstr("'no_such_function' is not registered"));
  EXPECT_TRUE(absl::IsNotFound(v->Fetch().status()));
  // The error was raised once; the coordinator is usable again.
  EXPECT_TRUE((*coordinator)->Join().ok());
  auto ok = (*coordinator)->Schedule("add", {1, 2});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->Fetch()->int_value(), 3);
}

TEST(CoordinatorTest, WrongArgumentTypeIsAClearError) {
  LocalCluster cluster(1, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  auto v = (*coordinator)->Schedule("add", {1, "two"});
  ASSERT_TRUE(v.ok());
  absl::Status joined = (*coordinator)->Join();
  EXPECT_TRUE(absl::IsInvalidArgument(joined));
  EXPECT_EQ(joined.message(), "argument 1 of function 'add' must be int, got string");
}

TEST(CoordinatorTest, RemoteValueAsInputIsRefused) {
  LocalCluster cluster(1, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  auto first = (*coordinator)->Schedule("add", {1, 2});
  ASSERT_TRUE(first.ok());
  auto second = (*coordinator)->Schedule("add", {*first, 2});
  EXPECT_TRUE(absl::IsInvalidArgument(second.status()));
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr("a RemoteValue cannot be the input of another scheduled function"));
}

TEST(CoordinatorTest, FailingFunctionNextToALongOneCancelsTheLongOne) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  const std::string marker = MarkerPath("long-started");
  auto long_one = (*coordinator)->Schedule("sleep", {600'000, marker});
  ASSERT_TRUE(long_one.ok());
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(marker); }));
  auto failing = (*coordinator)->Schedule("fail", {"the failure"});
  ASSERT_TRUE(failing.ok());
  absl::Status joined = (*coordinator)->Join();
  EXPECT_EQ(joined.message(), "the failure");
  // When Join raised, nothing was executing any more: the long one was cancelled, not left running.
  EXPECT_EQ((*coordinator)->inflight(), 0u);
  EXPECT_TRUE(absl::IsCancelled(long_one->Fetch().status()));
  auto later = (*coordinator)->Schedule("add", {2, 3});
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->Fetch()->int_value(), 5);
  EXPECT_TRUE((*coordinator)->Join().ok());
}

TEST(CoordinatorTest, QueuedClosuresAreCancelledWhenOneFails) {
  LocalCluster cluster(1, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  CoordinatorOptions options = FastOptions();
  options.max_inflight_per_worker = 1;
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), options);
  ASSERT_TRUE(coordinator.ok());
  auto failing = (*coordinator)->Schedule("fail");
  std::vector<RemoteValue> queued;
  for (int i = 0; i < 20; ++i) queued.push_back(*(*coordinator)->Schedule("sleep", {50}));
  EXPECT_TRUE(absl::IsInvalidArgument((*coordinator)->Join()));
  int cancelled = 0;
  for (auto& v : queued) {
    auto r = v.Fetch();
    if (absl::IsCancelled(r.status())) {
      ++cancelled;
    } else {
      EXPECT_TRUE(r.ok()) << r.status();
    }
  }
  EXPECT_GT(cancelled, 0);
}

TEST(CoordinatorTest, ScheduleRaisesThePendingErrorOnce) {
  LocalCluster cluster(1, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  auto failing = (*coordinator)->Schedule("fail", {"first failure"});
  ASSERT_TRUE(failing.ok());
  ASSERT_EQ(failing->Fetch().status().message(), "first failure");
  auto next = (*coordinator)->Schedule("add", {1, 1});
  EXPECT_EQ(next.status().message(), "first failure");
  auto after = (*coordinator)->Schedule("add", {1, 1});
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->Fetch()->int_value(), 2);
}

TEST(CoordinatorTest, PerWorkerResourcesAreSubstitutedPerWorker) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  auto counters = (*coordinator)->CreatePerWorkerResource("counter", {100});
  ASSERT_TRUE(counters.ok()) << counters.status();
  auto described = Fetch(*counters);
  ASSERT_TRUE(described.ok()) << described.status();
  ASSERT_EQ(described->size(), 2u);
  EXPECT_EQ(described->at(1).string_value(), "counter on worker 1");
  std::vector<RemoteValue> nexts;
  for (int i = 0; i < 40; ++i)
    nexts.push_back(*(*coordinator)->Schedule("counter_next", {*counters}));
  ASSERT_TRUE((*coordinator)->Join().ok());
  std::map<int64_t, std::vector<int64_t>> per_worker;
  for (auto& v : nexts) {
    auto pair = v.Fetch();
    ASSERT_TRUE(pair.ok()) << pair.status();
    per_worker[pair->list().values(0).int_value()].push_back(pair->list().values(1).int_value());
  }
  // Each worker's counter counts its own calls from 100, with no gaps: one instance per worker.
  int64_t total = 0;
  for (auto& [worker, values] : per_worker) {
    std::sort(values.begin(), values.end());
    for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(values[i], 100 + static_cast<int64_t>(i));
    total += static_cast<int64_t>(values.size());
  }
  EXPECT_EQ(total, 40);
}

TEST(CoordinatorTest, AWorkerAddedWhileRunningGetsResourcesAndTakesWork) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartWorker(0).ok());
  auto coordinator = ClusterCoordinator::Create(std::vector<std::string>{cluster.worker_address(0)},
                                                FastOptions());
  ASSERT_TRUE(coordinator.ok());
  auto counters = (*coordinator)->CreatePerWorkerResource("counter");
  ASSERT_TRUE(counters.ok());
  ASSERT_TRUE(cluster.StartWorker(1).ok());
  auto index = (*coordinator)->AddWorker(cluster.worker_address(1));
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(*index, 1);
  EXPECT_TRUE(absl::IsAlreadyExists((*coordinator)->AddWorker(cluster.worker_address(1)).status()));
  auto described = Fetch(*counters);
  ASSERT_TRUE(described.ok());
  EXPECT_EQ(described->at(1).string_value(), "counter on worker 1");
  // Long enough closures that both workers must take some.
  std::vector<RemoteValue> values;
  for (int i = 0; i < 20; ++i) values.push_back(*(*coordinator)->Schedule("sleep", {20}));
  ASSERT_TRUE((*coordinator)->Join().ok());
  std::set<int64_t> ran_on;
  for (auto& v : values) ran_on.insert(v.Fetch()->int_value());
  EXPECT_EQ(ran_on, (std::set<int64_t>{0, 1}));
}

// Workers that join by registering keep the task index their notices name; an index or address
// already live is refused, and an unindexed add goes past the highest index.
TEST(CoordinatorTest, AWorkerAddedAsATaskIndexKeepsItAndCollisionsAreRefused) {
  LocalCluster cluster(3, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(std::vector<std::string>{cluster.worker_address(0)},
                                                FastOptions());
  ASSERT_TRUE(coordinator.ok());
  auto added = (*coordinator)->AddWorker(cluster.worker_address(2), 2);
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(*added, 2);
  const absl::Status same_index = (*coordinator)->AddWorker(cluster.worker_address(1), 2).status();
  EXPECT_TRUE(absl::IsAlreadyExists(same_index)) << same_index;
  EXPECT_THAT(std::string(same_index.message()), ::testing::HasSubstr(cluster.worker_address(2)));
  EXPECT_TRUE(
      absl::IsAlreadyExists((*coordinator)->AddWorker(cluster.worker_address(2), 5).status()));
  auto next = (*coordinator)->AddWorker(cluster.worker_address(1));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(*next, 3);
  // Notices name the task index.
  EXPECT_TRUE((*coordinator)->PreemptWorker(2, absl::Now() + absl::Seconds(1)).ok());
  EXPECT_TRUE(absl::IsNotFound((*coordinator)->PreemptWorker(1, absl::Now())));
  // A preempted worker's slot stays taken: its successor registering is not a new worker (its
  // connection takes the successor when it answers).
  EXPECT_TRUE(
      absl::IsAlreadyExists((*coordinator)->AddWorker(cluster.worker_address(2), 2).status()));
}

TEST(CoordinatorTest, ARemovedWorkerIsDrainedAndTakesNoMoreWork) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  const std::string marker = MarkerPath("drain-started");
  auto running = (*coordinator)->Schedule("sleep", {300, marker});
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(marker); }));
  // Remove whichever worker runs the closure; its in-flight closure must finish, not be lost.
  std::ifstream marker_file(marker);
  int busy = -1;
  marker_file >> busy;
  ASSERT_TRUE((*coordinator)->RemoveWorker(cluster.worker_address(busy)).ok());
  EXPECT_EQ(running->Fetch()->int_value(), busy);
  EXPECT_EQ((*coordinator)->Workers()[static_cast<size_t>(busy)].state, WorkerState::kRemoved);
  std::vector<RemoteValue> values;
  for (int i = 0; i < 20; ++i) values.push_back(*(*coordinator)->Schedule("worker_index"));
  ASSERT_TRUE((*coordinator)->Join().ok());
  for (auto& v : values) EXPECT_EQ(v.Fetch()->int_value(), 1 - busy);
  EXPECT_TRUE(absl::IsNotFound((*coordinator)->RemoveWorker(cluster.worker_address(busy))));
}

TEST(CoordinatorTest, LongClosuresKeepTheDispatchWindowSmallAndSpreadOverWorkers) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  for (int i = 0; i < 400; ++i) ASSERT_TRUE((*coordinator)->Schedule("sleep", {5}).ok());
  ASSERT_TRUE((*coordinator)->Join().ok());
  // Time a closure waits on the worker is not network overhead: the window stays near 1 + 1, so an
  // idle worker is never starved while another hoards queued work.
  for (const auto& w : (*coordinator)->Workers()) {
    EXPECT_LE(w.window, 4) << "worker " << w.index;  // without wait_micros it grows past 8
    EXPECT_GE(w.completed, 120) << "worker " << w.index;
  }
}

TEST(CoordinatorTest, StaggeredStartDelaysLaterWorkers) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  CoordinatorOptions options = FastOptions();
  options.stagger_delay = absl::Seconds(30);
  options.stagger_cap = absl::Seconds(60);
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), options);
  ASSERT_TRUE(coordinator.ok());
  std::vector<RemoteValue> values;
  for (int i = 0; i < 10; ++i) values.push_back(*(*coordinator)->Schedule("worker_index"));
  ASSERT_TRUE((*coordinator)->Join().ok());
  // Worker 1 waits 30 s before its first closure, so worker 0 (no delay) ran everything.
  for (auto& v : values) EXPECT_EQ(v.Fetch()->int_value(), 0);
}

TEST(CoordinatorTest, AWorkerThatNeverAnswersEndsInUnavailableNamingIt) {
  CoordinatorOptions options = FastOptions();
  options.worker_recovery_timeout = absl::Milliseconds(300);
  const std::string dead = absl::StrCat("127.0.0.1:", local::PickFreePort());
  auto coordinator = ClusterCoordinator::Create(std::vector<std::string>{dead}, options);
  ASSERT_TRUE(coordinator.ok());
  auto v = (*coordinator)->Schedule("noop");
  ASSERT_TRUE(v.ok());
  absl::Status joined = (*coordinator)->Join();
  EXPECT_TRUE(absl::IsUnavailable(joined)) << joined;
  EXPECT_THAT(std::string(joined.message()), HasSubstr(dead));
  EXPECT_TRUE(absl::IsUnavailable(v->Fetch().status()));
}

TEST(CoordinatorTest, BadWorkerAddressIsRejected) {
  auto coordinator = ClusterCoordinator::Create(std::vector<std::string>{"no-port"}, FastOptions());
  EXPECT_TRUE(absl::IsInvalidArgument(coordinator.status()));
  EXPECT_THAT(std::string(coordinator.status().message()), HasSubstr("'no-port'"));
}

int CountThreads() {
  return static_cast<int>(std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                                        std::filesystem::directory_iterator()));
}

TEST(CoordinatorTest, ADroppedCoordinatorLeavesNoThreadBehind) {
  LocalCluster cluster(2, 0);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto run_once = [&] {
    auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
    ASSERT_TRUE(coordinator.ok());
    auto counters = (*coordinator)->CreatePerWorkerResource("counter");
    for (int i = 0; i < 100; ++i) ASSERT_TRUE((*coordinator)->Schedule("add", {i, i}).ok());
    // Dropped with work still queued: the destructor must cancel it and join every thread.
    for (int i = 0; i < 100; ++i) ASSERT_TRUE((*coordinator)->Schedule("sleep", {10}).ok());
  };
  run_once();  // gRPC starts its own process-wide threads on first use; count after that
  const int before = CountThreads();
  run_once();
  run_once();
  // gRPC's internal pool may shrink lazily, never grow: we must not have added threads.
  EXPECT_TRUE(WaitFor([&] { return CountThreads() <= before; }, absl::Seconds(10)))
      << "threads before " << before << ", after " << CountThreads();
}

}  // namespace
}  // namespace tj
