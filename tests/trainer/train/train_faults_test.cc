// tj-train as real processes: the digits job converges; killing a worker, a parameter server or
// the coordinator mid-run still ends with exactly the configured number of steps; a corrupt newest
// checkpoint is skipped for the previous one; bad data fails with the file and line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "coordinator/base/job_tls.h"
#include "coordinator/ps/ps_client.h"
#include "tests/trainer/test_files.h"
#include "tests/trainer/train/train_cluster.h"

namespace tj::testing {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;

// 20% of the 1,797 digits are held out: 1,438 training examples, 45 batches of 32 per epoch.
constexpr int64_t kStepsPerEpoch = 45;

std::vector<std::string> DigitsArgs(int epochs, int step_sleep_ms) {
  return {"--model=softmax",
          "--data=" + train::testing::DigitsCsvPath(),
          "--epochs=" + std::to_string(epochs),
          "--batch-size=32",
          "--learning-rate=0.001",
          "--log-every-steps=10",
          "--step-sleep-ms=" + std::to_string(step_sleep_ms)};
}

class TrainFaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (train::testing::DigitsCsvPath().empty()) {
      GTEST_SKIP() << "digits.csv.gz absent: apt-get install python3-sklearn";
    }
  }
};

TEST_F(TrainFaultsTest, DigitsConvergesWithTheExactStepCount) {
  TrainCluster cluster(/*num_ps=*/2, /*num_workers=*/2);
  cluster.env()["TJ_CHECKPOINT_INTERVAL_STEPS"] = "300";
  cluster.StartServers();
  std::vector<std::string> args = DigitsArgs(20, 0);
  args.push_back("--min-accuracy=0.92");
  cluster.StartChief(args);
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  auto progress = cluster.Progress();
  ASSERT_TRUE(progress.has_value());
  EXPECT_EQ(progress->state, "succeeded");
  EXPECT_EQ(progress->step, 20 * kStepsPerEpoch);
  EXPECT_EQ(progress->total_steps, 20 * kStepsPerEpoch);
  EXPECT_GE(progress->metrics.at("accuracy"), 0.92);
  EXPECT_EQ(progress->last_checkpoint_step, 20 * kStepsPerEpoch);
  // TensorBoard events next to the checkpoints.
  bool has_events = false;
  for (const auto& entry :
       std::filesystem::directory_iterator(cluster.checkpoint_dir() + "/events")) {
    has_events |= entry.path().filename().string().starts_with("events.out.tfevents.");
  }
  EXPECT_TRUE(has_events);
}

TEST_F(TrainFaultsTest, AKilledWorkerLosesNoStepAndRejoins) {
  TrainCluster cluster(1, 2);
  cluster.StartServers();
  cluster.StartChief(DigitsArgs(6, 10));
  ASSERT_TRUE(cluster.WaitForStep(40)) << cluster.Log("chief");
  cluster.Kill("worker-1");
  const int64_t at_kill = cluster.Step();
  ASSERT_TRUE(cluster.WaitForStep(at_kill + 30)) << "training goes on with one worker";
  cluster.StartWorker(1);
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  EXPECT_EQ(cluster.Progress()->step, 6 * kStepsPerEpoch);
  EXPECT_EQ(cluster.Progress()->state, "succeeded");
}

// `kubectl scale` up: the new worker's TF_CONFIG lists it, the coordinator's (older) does not. It
// registers with the coordinator, joins the pool and takes closures.
TEST_F(TrainFaultsTest, AWorkerAddedToARunningJobJoinsThePool) {
  TrainCluster cluster(1, 2);
  cluster.set_workers_known_to_chief(1);
  cluster.StartPs(0);
  cluster.StartWorker(0);
  cluster.StartChief(DigitsArgs(10, 10));
  ASSERT_TRUE(cluster.WaitForStep(20)) << cluster.Log("chief");
  cluster.StartWorker(1);
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  EXPECT_EQ(cluster.Progress()->step, 10 * kStepsPerEpoch);
  const std::string joined = "worker 1 at " + cluster.worker_address(1) + " joined";
  EXPECT_THAT(cluster.Progress()->events, Contains(HasSubstr(joined)));
  EXPECT_THAT(cluster.Log("chief"), ContainsRegex("worker 1 at " + cluster.worker_address(1) +
                                                  ": [1-9][0-9]* closure\\(s\\) completed"));
}

TEST_F(TrainFaultsTest, AKilledParameterServerRestartsTheCoordinatorFromItsCheckpoint) {
  TrainCluster cluster(1, 2);
  cluster.env()["TJ_CHECKPOINT_INTERVAL_STEPS"] = "50";
  cluster.StartServers();
  cluster.StartChief(DigitsArgs(6, 10));
  ASSERT_TRUE(cluster.WaitForStep(70)) << cluster.Log("chief");
  cluster.Kill("ps-0");
  // The coordinator asks for a restart with the job's restart exit code.
  ASSERT_EQ(cluster.WaitForChief(), 42) << cluster.Log("chief");
  EXPECT_THAT(cluster.Log("chief"), HasSubstr("lost parameter server task 0"));
  const std::optional<int64_t> saved = cluster.Progress()->last_checkpoint_step;
  ASSERT_TRUE(saved.has_value());
  EXPECT_GE(*saved, 50);

  // What the operator or tjctl run does next: the PS and the coordinator start again.
  cluster.StartPs(0);
  cluster.StartChief(DigitsArgs(6, 10));
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  auto progress = cluster.Progress();
  EXPECT_EQ(progress->restored_from_step, saved);
  EXPECT_EQ(progress->step, 6 * kStepsPerEpoch);
  EXPECT_THAT(cluster.Log("chief"),
              HasSubstr("training resumes at step " + std::to_string(*saved)));
}

// True while a shard of the checkpoint of `step` is being written (its temporary file exists).
bool ShardBeingWritten(const TrainCluster& cluster, int64_t step) {
  std::error_code error;
  const std::string dir = cluster.checkpoint_dir() + "/ckpt-" +
                          std::string(12 - std::to_string(step).size(), '0') + std::to_string(step);
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.path().filename().string().find(".tmp-") != std::string::npos) return true;
  }
  return false;
}

// The PS writes its shards at 1 kB/s (the test-only TJ_TEST_SHARD_BYTES_PER_SECOND): the 2.8 kB
// softmax shard takes about 3 s, longer than the test waits to kill it. Killed mid-save, the PS is
// lost, not awaited: the coordinator exits with the restart code, and the restart resumes from the
// checkpoint before, the unfinished one being ignored.
TEST_F(TrainFaultsTest, AParameterServerKilledMidCheckpointRestartsFromThePreviousOne) {
  TrainCluster cluster(1, 2);
  cluster.env()["TJ_CHECKPOINT_INTERVAL_STEPS"] = "50";
  cluster.env()["TJ_TEST_SHARD_BYTES_PER_SECOND"] = "1000";
  cluster.StartServers();
  cluster.StartChief(DigitsArgs(6, 10));
  ASSERT_TRUE(
      WaitFor([&] { return cluster.Checkpoints().size() == 1 && ShardBeingWritten(cluster, 100); },
              absl::Seconds(120)))
      << cluster.Log("chief");
  cluster.Kill("ps-0");
  ASSERT_EQ(cluster.WaitForChief(), 42) << cluster.Log("chief");
  EXPECT_THAT(cluster.Log("chief"), HasSubstr("lost parameter server task 0"));
  EXPECT_EQ(cluster.Checkpoints(), std::vector<std::string>{"ckpt-000000000050"});

  cluster.env().erase("TJ_TEST_SHARD_BYTES_PER_SECOND");
  cluster.StartPs(0);
  cluster.StartChief(DigitsArgs(6, 10));
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  EXPECT_EQ(cluster.Progress()->restored_from_step, 50);
  EXPECT_EQ(cluster.Progress()->step, 6 * kStepsPerEpoch);
}

TEST_F(TrainFaultsTest, AKilledCoordinatorResumesFromItsCheckpoint) {
  TrainCluster cluster(1, 2);
  cluster.env()["TJ_CHECKPOINT_INTERVAL_STEPS"] = "50";
  cluster.StartServers();
  cluster.StartChief(DigitsArgs(6, 10));
  ASSERT_TRUE(cluster.WaitForStep(110)) << cluster.Log("chief");
  cluster.Kill("chief");
  const std::optional<int64_t> saved = cluster.Progress()->last_checkpoint_step;
  ASSERT_TRUE(saved.has_value());

  cluster.StartChief(DigitsArgs(6, 10));
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  EXPECT_EQ(cluster.Progress()->restored_from_step, saved);
  EXPECT_EQ(cluster.Progress()->step, 6 * kStepsPerEpoch);
}

TEST_F(TrainFaultsTest, ACorruptNewestCheckpointIsSkippedForThePreviousOne) {
  TrainCluster cluster(1, 1);
  cluster.env()["TJ_CHECKPOINT_INTERVAL_STEPS"] = "45";
  cluster.StartServers();
  cluster.StartChief(DigitsArgs(3, 0));
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  // Checkpoints at 45, 90 and 135 (the last one final). Flip a byte in the newest shard.
  const std::string newest = cluster.checkpoint_dir() + "/ckpt-000000000135/ps-0-of-1.state";
  ASSERT_TRUE(std::filesystem::exists(newest));
  {
    std::fstream file(newest, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(40);
    const char byte = static_cast<char>(file.get());
    file.seekp(40);
    file.put(static_cast<char>(byte ^ 0x5a));
  }
  // A longer run of the same job resumes from step 90, not 135 and not 0.
  cluster.StartChief(DigitsArgs(4, 0));
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  EXPECT_EQ(cluster.Progress()->restored_from_step, 90);
  EXPECT_EQ(cluster.Progress()->step, 4 * kStepsPerEpoch);
  EXPECT_THAT(cluster.Log("chief"), HasSubstr("ps-0-of-1.state"));
}

TEST_F(TrainFaultsTest, ACheckpointOfAnotherConfigurationIsRefused) {
  TrainCluster cluster(1, 1);
  cluster.StartServers();
  cluster.StartChief(DigitsArgs(1, 0));
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  std::vector<std::string> other = DigitsArgs(2, 0);
  other.push_back("--seed=9");
  cluster.StartChief(other);
  EXPECT_EQ(cluster.WaitForChief(), 1);
  EXPECT_THAT(cluster.Log("chief"), HasSubstr("another configuration"));
}

TEST_F(TrainFaultsTest, APartitionedModelOverTwoPsTrainsExactlyAndResumesInTheSamePlacement) {
  // softmax/w [64, 10] in 2 shards of 32 rows, each stored as 3 slices of at most 12 rows (480
  // bytes): 6 slices over the 2 PS; softmax/b [10] in 2 shards of one slice.
  const std::vector<std::string> partitioned = {"--partitioner=fixed:2", "--max-slice-bytes=480"};
  auto args = [&](int epochs) {
    std::vector<std::string> a = DigitsArgs(epochs, 0);
    a.insert(a.end(), partitioned.begin(), partitioned.end());
    return a;
  };
  TrainCluster cluster(2, 1);
  cluster.env()["TJ_CHECKPOINT_INTERVAL_STEPS"] = "45";
  cluster.StartServers();
  cluster.StartChief(args(2));
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  EXPECT_EQ(cluster.Progress()->step, 2 * kStepsPerEpoch);
  EXPECT_THAT(cluster.Log("chief"), HasSubstr("2 shard(s), 6 slice(s) on 2 task(s)"));
  // Each PS holds its slices under their own names.
  for (int task = 0; task < 2; ++task) {
    auto health = PsClient::Connect(cluster.ps_address(task), task)->Health();
    ASSERT_TRUE(health.ok()) << health.status();
    EXPECT_EQ(health->num_variables(), 4);
  }

  // A longer run of the same job resumes from the final checkpoint and ends at its exact count.
  cluster.StartChief(args(3));
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  EXPECT_EQ(cluster.Progress()->restored_from_step, 2 * kStepsPerEpoch);
  EXPECT_EQ(cluster.Progress()->step, 3 * kStepsPerEpoch);

  // The same checkpoint under another placement is refused before any PS is touched.
  std::vector<std::string> other = DigitsArgs(4, 0);
  other.push_back("--partitioner=fixed:1");
  cluster.StartChief(other);
  EXPECT_EQ(cluster.WaitForChief(), 1);
  EXPECT_THAT(cluster.Log("chief"), AllOf(HasSubstr("another placement"), HasSubstr("'softmax/")));
}

TEST_F(TrainFaultsTest, BadDataFailsTheCoordinatorNamingFileAndLine) {
  TrainCluster cluster(1, 1);
  const std::string bad = train::testing::WriteFile("wrong-width.csv", "1,2,0\n1,2,1\n1,0\n");
  cluster.StartServers();
  cluster.StartChief({"--model=softmax", "--data=" + bad});
  EXPECT_EQ(cluster.WaitForChief(), 1);
  EXPECT_THAT(cluster.Log("chief"), HasSubstr(bad + ":3"));
  EXPECT_FALSE(std::filesystem::exists(cluster.checkpoint_dir() + "/ckpt-000000000000"));
}

TEST_F(TrainFaultsTest, AJobWithATokenTrainsAndRefusesEveryoneElse) {
  TrainCluster cluster(1, 2);
  cluster.env()["TJ_TOKEN"] = "job-secret-1234";
  cluster.StartServers();
  cluster.StartChief(DigitsArgs(1, 0));
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  EXPECT_EQ(cluster.Progress()->step, kStepsPerEpoch);
  EXPECT_THAT(cluster.Log("ps-0"), HasSubstr("RPCs require the job token"));

  // This test process has no token: the job's parameter server does not answer it.
  auto outsider = PsClient::Connect(cluster.ps_address(0), 0);
  const absl::Status refused = outsider->Health().status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnauthenticated) << refused;
}

TEST_F(TrainFaultsTest, AJobWithTlsAndATokenTrainsAndPlaintextIsRefused) {
  TempDir certs;
  ASSERT_TRUE(GenerateJobTls(certs.path(), {"localhost"}, {"127.0.0.1"}).ok());
  TrainCluster cluster(1, 2);
  cluster.env()["TJ_TOKEN"] = "job-secret-tls";
  cluster.env()["TJ_TLS_DIR"] = certs.path();
  cluster.StartServers();
  cluster.StartChief(DigitsArgs(1, 0));
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  EXPECT_EQ(cluster.Progress()->step, kStepsPerEpoch);
  EXPECT_THAT(cluster.Log("ps-0"), HasSubstr("channels use TLS"));
  // This test process speaks plaintext: the job's PS does not answer it.
  auto outsider = PsClient::Connect(cluster.ps_address(0), 0, {absl::Seconds(2)});
  EXPECT_FALSE(outsider->Health().ok());
}

}  // namespace
}  // namespace tj::testing
