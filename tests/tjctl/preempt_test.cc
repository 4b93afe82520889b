// `tjctl preempt` against a real `tjctl run` of tj-train (digits, slowed down): a PS, a worker and
// the coordinator are preempted mid-run; the job still succeeds with the exact step count, the
// preempted replicas are restarted, and no restart counts toward backoffLimit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tests/support/temp_dir.h"
#include "tests/support/wait_for.h"
#include "tests/tjctl/digits_job.h"
#include "tjctl/local/process.h"

namespace tj {
namespace {

constexpr int64_t kSteps = testing::kDigitsSteps;

class PreemptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(testing::kDigitsData)) GTEST_SKIP() << "python3-sklearn absent";
    std::ofstream(dir_.Join("job.yaml")) << testing::DigitsJobYaml(TJ_TRAIN_BINARY, "");
  }

  void StartRun(const std::vector<std::string>& extra = {}) {
    local::ProcessSpec spec;
    spec.binary = TJCTL_BINARY;
    spec.args = {"run", dir_.Join("job.yaml"), "--work-dir", work_dir(), "--quiet"};
    spec.args.insert(spec.args.end(), extra.begin(), extra.end());
    spec.log_path = dir_.Join("run.log");
    auto run = local::ChildProcess::Start(spec);
    ASSERT_TRUE(run.ok()) << run.status();
    run_ = std::make_unique<local::ChildProcess>(*std::move(run));
  }

  std::string work_dir() const { return dir_.Join("work"); }

  nlohmann::json Status() const { return testing::ReadJsonFile(work_dir() + "/status.json"); }
  // The coordinator's live progress (status.json carries it at the end).
  int64_t Step() const {
    return testing::ReadJsonFile(work_dir() + "/progress.json").value("step", int64_t{-1});
  }

  int Preempt(const std::string& replica, const std::string& grace) {
    auto preempt = local::ChildProcess::Start(
        {TJCTL_BINARY,
         {"preempt", "digits", replica, "--grace", grace, "--work-dir", work_dir()},
         {},
         dir_.Join("preempt.log"),
         {}});
    EXPECT_TRUE(preempt.ok());
    auto exit = preempt->WaitForExit(absl::Seconds(120));
    return exit.has_value() ? exit->exit_code : -1;
  }

  // Waits for `tjctl run` to end; its exit code.
  int WaitForRun() {
    auto exit = run_->WaitForExit(absl::Seconds(180));
    return exit.has_value() ? exit->exit_code : -1;
  }

  std::string Log(const std::string& name) const {
    std::ifstream in(dir_.Join(name));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  void ExpectSucceededExactly() {
    ASSERT_EQ(WaitForRun(), 0) << Log("run.log") << Log("preempt.log");
    const nlohmann::json status = Status();
    EXPECT_EQ(status["phase"], "Succeeded");
    EXPECT_EQ(status["progress"]["step"], kSteps);
    EXPECT_EQ(status["restartCount"], 0) << "preemptions do not count toward backoffLimit";
  }

  testing::TempDir dir_;
  std::unique_ptr<local::ChildProcess> run_;
};

TEST_F(PreemptTest, APreemptedParameterServerCostsNoStep) {
  StartRun();
  ASSERT_TRUE(testing::WaitFor([&] { return Step() >= 150; }, absl::Seconds(60))) << Log("run.log");
  ASSERT_EQ(Preempt("ps-0", "0"), 0) << Log("preempt.log");
  ExpectSucceededExactly();
  const nlohmann::json status = Status();
  EXPECT_EQ(status["replicas"]["digits-ps-0"]["starts"], 2);
  EXPECT_GE(status["replicas"]["digits-coordinator-0"]["starts"], 2);
  EXPECT_GE(status["progress"]["restoredFromStep"], 150);
}

// Occurrences of `text` in a replica's log (every start of it appends to the same file).
int CountInLog(const std::string& path, const std::string& text) {
  std::ifstream in(path);
  const std::string log((std::istreambuf_iterator<char>(in)), {});
  int count = 0;
  for (size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++count;
  return count;
}

// The notice gives the PS 2 s: the coordinator checkpoints and exits at once, and its successor
// must not start (and restore into the PS about to go) until the PS has been replaced. Before
// replacementPolicy the coordinator started three times: it resumed against the noticed PS and
// lost it again when its SIGTERM came, checkpointing a second time.
TEST_F(PreemptTest, OnePsPreemptionCostsOneCheckpointAndOneCoordinatorRestart) {
  StartRun();
  ASSERT_TRUE(testing::WaitFor([&] { return Step() >= 150; }, absl::Seconds(60))) << Log("run.log");
  ASSERT_EQ(Preempt("ps-0", "2"), 0) << Log("preempt.log");
  ExpectSucceededExactly();
  const nlohmann::json status = Status();
  EXPECT_EQ(status["replicas"]["digits-ps-0"]["starts"], 2);
  EXPECT_EQ(status["replicas"]["digits-coordinator-0"]["starts"], 2) << Log("run.log");
  const std::string coordinator_log = work_dir() + "/logs/digits-coordinator-0.log";
  EXPECT_EQ(CountInLog(coordinator_log, "preempted at step"), 1) << "one preemption checkpoint";
  EXPECT_EQ(CountInLog(coordinator_log, "restored checkpoint"), 1) << "one restore";
}

TEST_F(PreemptTest, APreemptedWorkerIsReplacedWithoutACheckpoint) {
  StartRun();
  ASSERT_TRUE(testing::WaitFor([&] { return Step() >= 60; }, absl::Seconds(60))) << Log("run.log");
  ASSERT_EQ(Preempt("worker-1", "1"), 0) << Log("preempt.log");
  ExpectSucceededExactly();
  const nlohmann::json status = Status();
  EXPECT_EQ(status["replicas"]["digits-worker-1"]["starts"], 2);
  EXPECT_EQ(status["replicas"]["digits-coordinator-0"]["starts"], 1);
  EXPECT_FALSE(status["progress"].contains("restoredFromStep")) << status.dump(2);
}

TEST_F(PreemptTest, APreemptedCoordinatorResumesFromItsPreemptionCheckpoint) {
  StartRun();
  ASSERT_TRUE(testing::WaitFor([&] { return Step() >= 60; }, absl::Seconds(60))) << Log("run.log");
  ASSERT_EQ(Preempt("coordinator-0", "0"), 0) << Log("preempt.log");
  ExpectSucceededExactly();
  const nlohmann::json status = Status();
  EXPECT_EQ(status["replicas"]["digits-coordinator-0"]["starts"], 2);
  EXPECT_GE(status["progress"]["restoredFromStep"], 60);
}

TEST_F(PreemptTest, WithTlsEveryChannelIsEncryptedAndTheJobStillSurvivesAPreemption) {
  StartRun({"--tls"});
  ASSERT_TRUE(testing::WaitFor([&] { return Step() >= 60; }, absl::Seconds(60))) << Log("run.log");
  ASSERT_EQ(Preempt("coordinator-0", "0"), 0) << Log("preempt.log");  // the notice RPC uses TLS
  ExpectSucceededExactly();
  EXPECT_TRUE(std::filesystem::exists(work_dir() + "/tls/ca.crt"));
  std::ifstream log(work_dir() + "/logs/digits-ps-0.log");
  const std::string text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_NE(text.find("channels use TLS"), std::string::npos) << text;
}

// Not a preemption: the PS process is killed outright. The coordinator exits with the restart code,
// tjctl run restarts it and the PS (both counted: this is a failure), the last periodic checkpoint
// is restored, and the job ends with the exact step count.
TEST_F(PreemptTest, AKilledParameterServerIsSurvivedThroughTheRestartCode) {
  StartRun();
  ASSERT_TRUE(testing::WaitFor([&] { return Step() >= 150; }, absl::Seconds(60))) << Log("run.log");
  const nlohmann::json before = Status();
  const pid_t ps = before["replicas"]["digits-ps-0"]["pid"].get<pid_t>();
  ASSERT_EQ(kill(ps, SIGKILL), 0);
  ASSERT_EQ(WaitForRun(), 0) << Log("run.log");
  const nlohmann::json status = Status();
  EXPECT_EQ(status["phase"], "Succeeded");
  EXPECT_EQ(status["progress"]["step"], kSteps);
  EXPECT_EQ(status["replicas"]["digits-ps-0"]["starts"], 2);
  EXPECT_EQ(status["replicas"]["digits-coordinator-0"]["starts"], 2);
  EXPECT_EQ(status["restartCount"], 2) << "the PS (137) and the coordinator (42)";
  EXPECT_GE(status["progress"]["restoredFromStep"], 100);
}

// A failurePolicy RestartJob rule on a worker killed outright: tjctl run stops every replica and
// starts them all again, the coordinator restores the last periodic checkpoint, and the job ends
// with the exact step count after one counted restart.
TEST_F(PreemptTest, ARestartJobRuleRestartsEveryReplicaAndKeepsTheExactStepCount) {
  std::ofstream(dir_.Join("job.yaml"))
      << testing::DigitsJobYaml(TJ_TRAIN_BINARY, "")
      << "  failurePolicy:\n    rules:\n    - {action: RestartJob, replicaTypes: [Worker], "
         "onExitCodes: {operator: In, values: [137]}}\n";
  StartRun();
  ASSERT_TRUE(testing::WaitFor([&] { return Step() >= 150; }, absl::Seconds(60))) << Log("run.log");
  const pid_t worker = Status()["replicas"]["digits-worker-1"]["pid"].get<pid_t>();
  ASSERT_EQ(kill(worker, SIGKILL), 0);
  ASSERT_EQ(WaitForRun(), 0) << Log("run.log");
  const nlohmann::json status = Status();
  EXPECT_EQ(status["phase"], "Succeeded");
  EXPECT_EQ(status["progress"]["step"], kSteps);
  EXPECT_EQ(status["restartCount"], 1) << "one job restart, whatever the replicas stopped for it";
  for (const char* replica : {"digits-coordinator-0", "digits-ps-0", "digits-worker-0",
                              "digits-worker-1"}) {
    EXPECT_EQ(status["replicas"][replica]["starts"], 2) << replica;
  }
  EXPECT_GE(status["progress"]["restoredFromStep"], 100);
}

}  // namespace
}  // namespace tj
