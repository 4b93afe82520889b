// Preemption of a tj-train job of real processes, after TensorFlow's failure-handler tests adapted
// to PS training: SIGTERM to the coordinator (grace 0: one checkpoint; grace > 0: two), a PS notice
// over the Coordination service, a worker notice, several preemptions in a row. Every run ends
// with the exact step count after the restarts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>
#include <fstream>

#include "coordinator/coordination/coordination_client.h"
#include "tests/support/http_get.h"
#include "tests/trainer/test_files.h"
#include "tests/trainer/train/train_cluster.h"

namespace tj::testing {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kStepsPerEpoch = 45;
// Long enough (about 4 s with two workers) that a grace period of a few seconds ends before the
// training does.
constexpr int kEpochs = 20;

std::vector<std::string> SlowDigits() {
  return {"--model=softmax", "--data=" + train::testing::DigitsCsvPath(),
          "--epochs=" + std::to_string(kEpochs), "--step-sleep-ms=10", "--log-every-steps=5"};
}

class PreemptionProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (train::testing::DigitsCsvPath().empty()) GTEST_SKIP() << "python3-sklearn absent";
  }
  // Restarts the coordinator and checks the run finishes where it should, resuming from `from`.
  static void FinishAfterRestart(TrainCluster& cluster, int64_t from) {
    cluster.StartChief(SlowDigits());
    ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
    EXPECT_EQ(cluster.Progress()->restored_from_step, from);
    EXPECT_EQ(cluster.Progress()->step, kEpochs * kStepsPerEpoch);
  }
};

TEST_F(PreemptionProcessTest, SigtermWithoutGraceCheckpointsOnceAndExitsWithTheRestartCode) {
  TrainCluster cluster(1, 2);
  cluster.StartServers();
  cluster.StartChief(SlowDigits());
  ASSERT_TRUE(cluster.WaitForStep(40)) << cluster.Log("chief");
  const absl::Time sent = absl::Now();
  EXPECT_EQ(cluster.SignalAndWait("chief", SIGTERM), 42) << cluster.Log("chief");
  EXPECT_LT(absl::Now() - sent, absl::Seconds(40));
  const std::vector<std::string> saved = cluster.Checkpoints();
  ASSERT_EQ(saved.size(), 1u) << "exactly one checkpoint";
  const int64_t step = *cluster.Progress()->last_checkpoint_step;
  EXPECT_EQ(cluster.Progress()->state, "preempted");
  EXPECT_THAT(cluster.Log("chief"), HasSubstr("notice for chief:0 (SIGTERM)"));
  ASSERT_FALSE(cluster.Progress()->events.empty()) << "notices are reported in the progress";
  EXPECT_THAT(cluster.Progress()->events.front(), HasSubstr("notice for chief:0 (SIGTERM)"));
  FinishAfterRestart(cluster, step);
}

TEST_F(PreemptionProcessTest, SigtermWithAGracePeriodCheckpointsTwiceBeforeTheDeadline) {
  TrainCluster cluster(1, 2);
  cluster.env()["TJ_PREEMPTION_GRACE_PERIOD_SECONDS"] = "3";
  cluster.StartServers();
  cluster.StartChief(SlowDigits());
  ASSERT_TRUE(cluster.WaitForStep(40)) << cluster.Log("chief");
  const absl::Time sent = absl::Now();
  EXPECT_EQ(cluster.SignalAndWait("chief", SIGTERM), 42) << cluster.Log("chief");
  EXPECT_LT(absl::Now() - sent, absl::Seconds(3 + 15));
  const std::vector<std::string> saved = cluster.Checkpoints();
  ASSERT_EQ(saved.size(), 2u) << "one at the notice, one before the deadline";
  FinishAfterRestart(cluster, *cluster.Progress()->last_checkpoint_step);
}

TEST_F(PreemptionProcessTest, APsNoticeCheckpointsAndTheRestartedJobLosesNoStep) {
  TrainCluster cluster(1, 2);
  cluster.StartServers();
  cluster.StartChief(SlowDigits());
  ASSERT_TRUE(cluster.WaitForStep(40)) << cluster.Log("chief");
  CoordinationClient coordination(cluster.chief_address());
  auto response = coordination.SendPreemptionNotice(MakeTaskId("ps", 0), "EvictionByEvictionAPI",
                                                    absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_TRUE(response->accepted()) << response->decision();
  ASSERT_EQ(cluster.WaitForChief(), 42) << cluster.Log("chief");
  ASSERT_EQ(cluster.Checkpoints().size(), 1u);
  const int64_t step = *cluster.Progress()->last_checkpoint_step;
  // The platform takes the PS away and starts a new one.
  cluster.Kill("ps-0");
  cluster.StartPs(0);
  FinishAfterRestart(cluster, step);
}

// An evicted PS pod gets SIGTERM, maybe before the operator's notice reaches the coordinator: it
// tells the coordinator itself and keeps serving until the coordinator has checkpointed and exited.
TEST_F(PreemptionProcessTest, ASigtermedPsServesUntilTheCoordinatorCheckpointedAndExited) {
  TrainCluster cluster(1, 2);
  cluster.StartServers();
  cluster.StartChief(SlowDigits());
  ASSERT_TRUE(cluster.WaitForStep(40)) << cluster.Log("chief");
  cluster.Signal("ps-0", SIGTERM);
  ASSERT_EQ(cluster.WaitForChief(), 42) << cluster.Log("chief");
  EXPECT_THAT(cluster.Log("chief"), HasSubstr("notice for ps:0 (SIGTERM)"));
  ASSERT_EQ(cluster.Checkpoints().size(), 1u) << cluster.Log("chief");
  const int64_t step = *cluster.Progress()->last_checkpoint_step;
  EXPECT_GE(step, 40);
  // The PS outlived the coordinator's checkpoint and stops once the coordinator is gone.
  EXPECT_EQ(cluster.WaitForExit("ps-0", absl::Seconds(30)), 0) << cluster.Log("ps-0");
  EXPECT_THAT(cluster.Log("ps-0"), HasSubstr("serving until the coordinator"));
  EXPECT_THAT(cluster.Log("ps-0"), HasSubstr("the coordinator is done"));
  cluster.StartPs(0);
  FinishAfterRestart(cluster, step);
}

// Without a coordinator to wait for, SIGTERM stops a PS at once; so does a second SIGTERM.
TEST_F(PreemptionProcessTest, APsStopsAtOnceWhenNoCoordinatorAnswersOrOnASecondSignal) {
  TrainCluster alone(1, 1);
  alone.StartPs(0);
  ASSERT_TRUE(WaitFor([&] { return alone.Log("ps-0").find("serving") != std::string::npos; },
                      absl::Seconds(30)));
  alone.Signal("ps-0", SIGTERM);
  EXPECT_EQ(alone.WaitForExit("ps-0", absl::Seconds(15)), 0) << alone.Log("ps-0");
  EXPECT_THAT(alone.Log("ps-0"), HasSubstr("does not answer"));

  // A coordinator with a grace period trains on after the notice, so the PS would wait long.
  TrainCluster cluster(1, 2);
  cluster.env()["TJ_PREEMPTION_GRACE_PERIOD_SECONDS"] = "600";
  cluster.StartServers();
  cluster.StartChief(SlowDigits());
  ASSERT_TRUE(cluster.WaitForStep(40)) << cluster.Log("chief");
  cluster.Signal("ps-0", SIGTERM);
  ASSERT_TRUE(WaitFor(
      [&] {
        return cluster.Log("ps-0").find("serving until the coordinator") != std::string::npos;
      },
      absl::Seconds(30)))
      << cluster.Log("ps-0");
  cluster.Signal("ps-0", SIGTERM);
  EXPECT_EQ(cluster.WaitForExit("ps-0", absl::Seconds(15)), 0) << cluster.Log("ps-0");
  EXPECT_THAT(cluster.Log("ps-0"), HasSubstr("SIGTERM again"));
}

TEST_F(PreemptionProcessTest, AWorkerNoticeNeitherCheckpointsNorStopsTraining) {
  TrainCluster cluster(1, 2);
  const int metrics_port = local::PickFreePort();
  cluster.StartServers();
  cluster.StartChief(SlowDigits(),
                     {{"TJ_METRICS_ADDRESS", "127.0.0.1:" + std::to_string(metrics_port)}});
  ASSERT_TRUE(cluster.WaitForStep(40)) << cluster.Log("chief");
  CoordinationClient coordination(cluster.chief_address());
  auto response = coordination.SendPreemptionNotice(MakeTaskId("worker", 1), "DisruptionTarget",
                                                    absl::Now() + absl::Seconds(1));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_TRUE(response->accepted()) << response->decision();
  const int64_t at_notice = cluster.Step();
  ASSERT_TRUE(cluster.WaitForStep(at_notice + 20)) << "training goes on with worker 0";
  // The notice is in the coordinator's metrics, which Prometheus' own parser accepts.
  const std::string scraped = HttpGet(metrics_port, "/metrics");
  EXPECT_THAT(scraped, HasSubstr("tj_preemption_events_total 1"));
  EXPECT_THAT(scraped, HasSubstr("tj_training_step "));
  EXPECT_THAT(scraped, HasSubstr("tj_goodput_ratio "));
  EXPECT_THAT(scraped, HasSubstr("tj_goodput_lost_seconds{cause=\"waiting_for_workers\"} "));
  const std::string body = scraped.substr(scraped.find("\r\n\r\n") + 4);
  TempDir dir;
  std::ofstream(dir.Join("metrics.txt")) << body;
  EXPECT_EQ(std::system(("promtool check metrics < " + dir.Join("metrics.txt")).c_str()), 0)
      << body;
  cluster.Kill("worker-1");
  cluster.StartWorker(1);
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  EXPECT_EQ(cluster.Progress()->step, kEpochs * kStepsPerEpoch);
  EXPECT_EQ(cluster.Checkpoints().size(), 1u) << "only the final checkpoint";
  // The successor registering took the preempted worker's slot, not a second one.
  const std::string chief_log = cluster.Log("chief");
  const std::string added = "worker 1 at " + cluster.worker_address(1) + " added";
  EXPECT_EQ(chief_log.find(added), chief_log.rfind(added)) << chief_log;
  EXPECT_FALSE(cluster.Progress()->restored_from_step.has_value());
  // Goodput: worker 1 was away from its notice until its successor took its slot.
  ASSERT_TRUE(cluster.Progress()->goodput.has_value());
  const v1alpha1::TimeSplit split = cluster.Progress()->goodput->seconds;
  EXPECT_GT(split.productive, 0);
  EXPECT_GT(split.lost_by(v1alpha1::LostCause::kWaitingForWorkers), 0);
  EXPECT_GT(split.lost_by(v1alpha1::LostCause::kStartup), 0);
  EXPECT_EQ(split.lost_by(v1alpha1::LostCause::kRestart), 0) << "nothing was restored";
}

TEST_F(PreemptionProcessTest, SeveralPreemptionsInARow) {
  TrainCluster cluster(1, 2);
  cluster.StartServers();
  cluster.StartChief(SlowDigits());
  ASSERT_TRUE(cluster.WaitForStep(30)) << cluster.Log("chief");
  // 1. A PS notice, the PS replaced.
  CoordinationClient coordination(cluster.chief_address());
  ASSERT_TRUE(
      coordination.SendPreemptionNotice(MakeTaskId("ps", 0), "spot", absl::InfiniteFuture()).ok());
  ASSERT_EQ(cluster.WaitForChief(), 42) << cluster.Log("chief");
  cluster.Kill("ps-0");
  cluster.StartPs(0);
  const int64_t first = *cluster.Progress()->last_checkpoint_step;
  // 2. The restarted coordinator gets SIGTERM.
  cluster.StartChief(SlowDigits());
  ASSERT_TRUE(cluster.WaitForStep(first + 30)) << cluster.Log("chief");
  EXPECT_EQ(cluster.Progress()->restored_from_step, first);
  EXPECT_EQ(cluster.SignalAndWait("chief", SIGTERM), 42);
  const int64_t second = *cluster.Progress()->last_checkpoint_step;
  EXPECT_GT(second, first);
  // 3. A worker notice, then the run finishes.
  cluster.StartChief(SlowDigits());
  ASSERT_TRUE(cluster.WaitForStep(second + 10)) << cluster.Log("chief");
  CoordinationClient again(cluster.chief_address());
  ASSERT_TRUE(again.SendPreemptionNotice(MakeTaskId("worker", 0), "spot", absl::Now()).ok());
  cluster.Kill("worker-0");
  cluster.StartWorker(0);
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  EXPECT_EQ(cluster.Progress()->restored_from_step, second);
  EXPECT_EQ(cluster.Progress()->step, kEpochs * kStepsPerEpoch);
}

}  // namespace
}  // namespace tj::testing
