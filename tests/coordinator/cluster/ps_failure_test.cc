// A lost parameter server: workers report "PS unreachable", the coordinator retries up to the
// transient threshold and then raises Unavailable from Join and Schedule, so its caller can restart
// from a checkpoint.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/cluster/cluster_coordinator.h"
#include "coordinator/ps/ps_error.h"
#include "tests/coordinator/cluster/coordinator_test_util.h"
#include "tests/coordinator/cluster/local_cluster.h"
#include "tests/support/wait_for.h"

namespace tj {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using testing::FastOptions;
using testing::LocalCluster;
using testing::ReadPsScalar;

TEST(PsFailureTest, PsKilledMakesJoinAndScheduleRaiseUnavailable) {
  LocalCluster cluster(2, 1);
  ASSERT_TRUE(cluster.StartAll().ok());
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), FastOptions());
  ASSERT_TRUE(coordinator.ok());
  ASSERT_TRUE((*coordinator)->Schedule("ps_add", {0, "v", 1.0}).ok());
  ASSERT_TRUE((*coordinator)->Join().ok());

  cluster.KillPs(0);
  // The retries of the first closures may reach the threshold while the later ones are still being
  // scheduled; then Schedule raises the error itself, and Join must raise the same one.
  absl::Status scheduled;
  for (int i = 0; i < 10 && scheduled.ok(); ++i) {
    scheduled = (*coordinator)->Schedule("ps_add", {0, "v", 1.0}).status();
  }
  absl::Status joined = scheduled.ok() ? (*coordinator)->Join() : scheduled;
  EXPECT_TRUE(absl::IsUnavailable(joined)) << joined;
  EXPECT_THAT(std::string(joined.message()),
              AllOf(HasSubstr("parameter server /job:ps/task:0 unavailable"),
                    HasSubstr("reached the threshold")));
  EXPECT_EQ(PsTaskOf(joined), 0) << "the coordinator's error names the PS task for its caller";

  // The PS stays failed: the next closure that needs it fails at once (the count is past the
  // threshold), and the next Schedule raises it.
  auto probe = (*coordinator)->Schedule("ps_add", {0, "v", 1.0});
  ASSERT_TRUE(probe.ok());
  EXPECT_TRUE(absl::IsUnavailable(probe->Fetch().status()));
  auto raised = (*coordinator)->Schedule("noop");
  EXPECT_TRUE(absl::IsUnavailable(raised.status())) << raised.status();
}

TEST(PsFailureTest, TransientPsErrorsBelowTheThresholdAreRetried) {
  LocalCluster cluster(1, 1);
  ASSERT_TRUE(cluster.StartAll().ok());
  CoordinatorOptions options = FastOptions();
  // Never reached: retries spin fast (~10k/s) while the PS restarts on a loaded machine.
  options.transient_ps_failure_threshold = 1 << 30;
  auto coordinator = ClusterCoordinator::Create(cluster.worker_addresses(), options);
  ASSERT_TRUE(coordinator.ok());
  cluster.KillPs(0);
  auto v = (*coordinator)->Schedule("ps_add", {0, "v", 1.0});
  ASSERT_TRUE(v.ok());
  // Retried while the PS is down; succeeds once it is back.
  ASSERT_TRUE(testing::WaitFor([&] { return (*coordinator)->Workers()[0].put_back >= 2; }));
  ASSERT_TRUE(cluster.StartPs(0).ok());
  ASSERT_TRUE((*coordinator)->Join().ok());
  EXPECT_TRUE(v->Fetch().ok());
  EXPECT_EQ(ReadPsScalar(**coordinator, 0, "v"), 1.0);
}

}  // namespace
}  // namespace tj
