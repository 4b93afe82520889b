// tj-train through a real `tjctl run` with its checkpoints in a real S3-compatible bucket
// (tests/support/s3_test_server.h): the endpoint comes from the container's `env` in the manifest
// and the credentials from tjctl's own environment, as a user would give them; the parameter
// server is SIGKILLed mid-run, the job restores from the bucket and ends with its exact step count,
// and the bucket holds the committed checkpoints and the claim of the newest coordinator.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "coordinator/checkpoint/object_checkpoint_store.h"
#include "coordinator/checkpoint/object_generation_claim.h"
#include "coordinator/checkpoint/s3_object_store.h"
#include "nlohmann/json.hpp"
#include "tests/coordinator/checkpoint/s3_test_env.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait_for.h"
#include "tests/tjctl/digits_job.h"
#include "tjctl/local/process.h"

namespace tj {
namespace {

using testing::S3TestEnvironment;
using testing::S3TestServer;

constexpr int64_t kSteps = testing::kDigitsSteps;

class RunS3Test : public ::testing::Test {
 protected:
  void SetUp() override {
    TJ_REQUIRE_S3_SERVER();
    if (!std::filesystem::exists(testing::kDigitsData)) GTEST_SKIP() << "python3-sklearn absent";
    const S3Options options = S3TestEnvironment::server()->Options();
    WriteJob("10");
    objects_ = std::make_unique<S3ObjectStore>(options, testing::kS3TestBucket);
  }

  // The digits job with `step_sleep_ms` per step, and `spec_lines` appended to its spec.
  void WriteJob(const std::string& step_sleep_ms, const std::string& spec_lines = "") {
    const S3Options options = S3TestEnvironment::server()->Options();
    std::string yaml = testing::DigitsJobYaml(
        TJ_TRAIN_BINARY,
        absl::StrCat(", env: [{name: TJ_S3_ENDPOINT, value: \"", options.endpoint,
                     "\"}, {name: TJ_S3_PART_BYTES, value: \"", kMinS3PartBytes, "\"}]"));
    absl::StrReplaceAll({{"--step-sleep-ms=10", "--step-sleep-ms=" + step_sleep_ms}}, &yaml);
    std::ofstream(dir_.Join("job.yaml")) << yaml << spec_lines;
  }

  std::string url() const { return absl::StrCat("s3://", testing::kS3TestBucket, "/", prefix_); }
  std::string work_dir() const { return dir_.Join("work"); }

  void StartRun() {
    start_ms_ = static_cast<uint64_t>(absl::ToUnixMillis(absl::Now()));
    const S3Options options = S3TestEnvironment::server()->Options();
    local::ProcessSpec spec;
    spec.binary = TJCTL_BINARY;
    spec.args = {"run",      dir_.Join("job.yaml"), "--work-dir",
                 work_dir(), "--checkpoint-dir",    url(),
                 "--quiet"};
    spec.env = {{"AWS_ACCESS_KEY_ID", options.access_key},
                {"AWS_SECRET_ACCESS_KEY", options.secret_key}};
    spec.log_path = dir_.Join("run.log");
    auto run = local::ChildProcess::Start(spec);
    ASSERT_TRUE(run.ok()) << run.status();
    run_ = std::make_unique<local::ChildProcess>(*std::move(run));
  }

  nlohmann::json Progress() const {
    return testing::ReadJsonFile(work_dir() + "/progress.json");
  }
  nlohmann::json Status() const { return testing::ReadJsonFile(work_dir() + "/status.json"); }
  int64_t Step() const {
    return testing::ReadJsonFile(work_dir() + "/progress.json").value("step", int64_t{-1});
  }
  std::string Log(const std::string& path) const {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::string CoordinatorLogPath() const { return work_dir() + "/logs/digits-coordinator-0.log"; }
  // What a failed assertion shows: tjctl's log and the coordinator's.
  std::string RunLogs() const { return Log(dir_.Join("run.log")) + Log(CoordinatorLogPath()); }
  // Withdraws the test identity's Write on the server until the returned guard goes, however the
  // test ends (an ASSERT included).
  struct WritesBackAtExit {
    S3TestServer* server;
    ~WritesBackAtExit() { (void)server->SetWritesAllowed(true); }
  };
  // Withdraws Write until the test ends (the fixture's guard gives it back). Call it under
  // ASSERT_NO_FATAL_FAILURE.
  void WithdrawWrites() {
    S3TestServer* server = S3TestEnvironment::server();
    ASSERT_TRUE(server->SetWritesAllowed(false).ok());
    // Built in place: a temporary guard would give Write back as it goes.
    writes_back_.reset(new WritesBackAtExit{server});
  }
  // Once the bucket holds the checkpoint of step 100, Write withdrawn. Under ASSERT_NO_FATAL_FAILURE.
  void WithdrawWritesAfterTheFirstCheckpoint() {
    ASSERT_TRUE(testing::WaitFor([&] { return CommittedAtLeast(100); }, absl::Seconds(120)))
        << RunLogs();
    WithdrawWrites();
  }
  // Whether the bucket holds a committed checkpoint of at least `step`.
  bool CommittedAtLeast(int64_t step) const {
    ObjectCheckpointStore store(*objects_, url(), prefix_, 100);
    auto listed = store.List();
    if (!listed.ok()) return false;
    for (const CheckpointListing& listing : *listed) {
      if (listing.committed && listing.step >= step) return true;
    }
    return false;
  }

  // The step of the newest checkpoint that verifies, -1 for none or an error.
  int64_t LatestValidStep() const {
    ObjectCheckpointStore store(*objects_, url(), prefix_, 100);
    auto latest = store.LatestValid();
    if (!latest.ok() || !latest->has_value()) return -1;
    return (*latest)->step;
  }
  // The highest step with a manifest in the bucket, -1 for none.
  int64_t NewestCommitted() const {
    ObjectCheckpointStore store(*objects_, url(), prefix_, 100);
    int64_t newest = -1;
    auto listed = store.List();
    if (!listed.ok()) return -1;
    for (const CheckpointListing& listing : *listed) {
      if (listing.committed) newest = std::max(newest, listing.step);
    }
    return newest;
  }

  // Grants Write again and expects what every refused-storage case ends with: the run exits 0
  // within `timeout`, Succeeded, with one coordinator start (`why` says why a second would be
  // wrong), no checkpoint error left in the progress and the final step's checkpoint valid in
  // the bucket. Call it under ASSERT_NO_FATAL_FAILURE.
  void ExpectSucceededOnceWritesReturn(absl::Duration timeout, const std::string& why) {
    ASSERT_TRUE(S3TestEnvironment::server()->SetWritesAllowed(true).ok());
    auto exit = run_->WaitForExit(timeout);
    ASSERT_TRUE(exit.has_value()) << RunLogs();
    ASSERT_EQ(exit->exit_code, 0) << RunLogs();
    EXPECT_EQ(Status()["phase"], "Succeeded");
    EXPECT_EQ(Status()["replicas"]["digits-coordinator-0"]["starts"], 1) << why;
    EXPECT_FALSE(Progress().contains("checkpointError")) << Progress().dump();
    EXPECT_EQ(LatestValidStep(), kSteps);
  }

  // Each test its own: the binary's tests share the server.
  std::string prefix_ = "jobs/tjctl-run-digits";
  testing::TempDir dir_;
  std::unique_ptr<S3ObjectStore> objects_;
  std::unique_ptr<local::ChildProcess> run_;
  std::unique_ptr<WritesBackAtExit> writes_back_;
  uint64_t start_ms_ = 0;
};

TEST_F(RunS3Test, AKilledParameterServerIsRestoredFromTheBucketAndTheJobEndsExactly) {
  StartRun();
  const std::string coordinator_log = work_dir() + "/logs/digits-coordinator-0.log";
  // Past the first checkpoint in the bucket (step 100), then the PS is killed outright.
  ASSERT_TRUE(
      testing::WaitFor([&] { return Step() >= 150 && CommittedAtLeast(100); }, absl::Seconds(120)))
      << Log(dir_.Join("run.log")) << Log(coordinator_log);
  const nlohmann::json before = Status();
  const pid_t ps = before["replicas"]["digits-ps-0"]["pid"].get<pid_t>();
  ASSERT_EQ(kill(ps, SIGKILL), 0);
  auto exit = run_->WaitForExit(absl::Seconds(240));
  ASSERT_TRUE(exit.has_value()) << Log(dir_.Join("run.log"));
  ASSERT_EQ(exit->exit_code, 0) << Log(dir_.Join("run.log")) << Log(coordinator_log);

  const nlohmann::json status = Status();
  EXPECT_EQ(status["phase"], "Succeeded");
  EXPECT_EQ(status["progress"]["step"], kSteps);
  EXPECT_EQ(status["checkpointDir"], url());
  EXPECT_EQ(status["replicas"]["digits-ps-0"]["starts"], 2);
  EXPECT_EQ(status["replicas"]["digits-coordinator-0"]["starts"], 2);
  EXPECT_GE(status["progress"]["restoredFromStep"], 100);
  EXPECT_THAT(Log(coordinator_log), ::testing::HasSubstr("restored"));
  EXPECT_FALSE(std::filesystem::exists(work_dir() + "/checkpoints")) << "a local copy was made";

  // The checkpoints are in the bucket, the newest verifies byte for byte, and a coordinator of this
  // run claimed the location.
  ObjectCheckpointStore store(*objects_, url(), prefix_, 100);
  auto latest = store.LatestValid();
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  EXPECT_GE((*latest)->step, 800);
  auto claimed = ReadClaimedGeneration(*objects_, store.ClaimKey());
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  // Generations tjctl hands out are at least the wall clock in milliseconds at the start.
  EXPECT_GE(*claimed, start_ms_) << "the claim is not of a coordinator of this run";
}

// Storage that goes bad under a running job: the identity's Write is withdrawn on the server
// after the first checkpoint. The next save fails without a manifest (the previous checkpoint stays
// the newest valid one), the coordinator keeps training and reports the refusal naming the bucket,
// the object and the credentials' source in its progress; once Write is granted again the next
// save succeeds, the report clears and the job ends with every step and its final checkpoint.
TEST_F(RunS3Test, WritesRefusedMidRunFailTheSaveCleanlyAndTrainingGoesOnUntilTheyReturn) {
  prefix_ = "jobs/tjctl-run-refused";
  WriteJob("40");  // slower steps: room for a refused save and a good one after it
  StartRun();
  const std::string coordinator_log = CoordinatorLogPath();
  auto logs = [&] { return RunLogs(); };
  ASSERT_NO_FATAL_FAILURE(WithdrawWritesAfterTheFirstCheckpoint());
  const int64_t newest_before = NewestCommitted();
  ASSERT_GE(newest_before, 100);
  ASSERT_EQ(LatestValidStep(), newest_before);

  // A save after the refusal fails and is reported; the run goes on.
  std::string error;
  std::optional<local::ProcessExit> ended;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        error = Progress().value("checkpointError", std::string());
        ended = run_->WaitForExit(absl::ZeroDuration());
        return !error.empty() || ended.has_value();
      },
      absl::Seconds(120)))
      << logs();
  ASSERT_FALSE(ended.has_value()) << "the run ended (exit " << ended->exit_code
                                  << ") on a refused save\n" << logs() << Log(work_dir() + "/status.json");
  EXPECT_THAT(error, ::testing::HasSubstr(absl::StrCat("s3://", testing::kS3TestBucket, "/",
                                                       prefix_, "/")));
  EXPECT_THAT(error, ::testing::HasSubstr("PUT"));
  EXPECT_THAT(error, ::testing::HasSubstr("refused"));
  const int64_t failed_at = Progress().value("step", int64_t{-1});
  EXPECT_EQ(NewestCommitted(), newest_before) << "a manifest was written while writes are refused";
  EXPECT_EQ(LatestValidStep(), newest_before);
  ASSERT_TRUE(testing::WaitFor([&] { return Step() >= failed_at + 50; }, absl::Seconds(120)))
      << "training stopped after the refused save\n" << logs();
  EXPECT_EQ(Status()["replicas"]["digits-coordinator-0"]["starts"], 1);

  // Writes are back: the next interval's save succeeds and the report clears.
  ASSERT_NO_FATAL_FAILURE(
      ExpectSucceededOnceWritesReturn(absl::Seconds(240), "a refused save is not a restart"));
}

// The object names of the final save (step 900) appear in no other save's error.
constexpr char kFinalCheckpointObjects[] = "ckpt-000000000900";

// Writes withdrawn mid-run and still refused when training ends: the final save is refused and
// tried again (CheckpointRetryPolicy: 5 attempts, 1-8 s apart); once Write is granted during
// those attempts, one of them saves, and the job succeeds with every step and its final checkpoint.
TEST_F(RunS3Test, ARefusedFinalSaveIsTriedAgainAndTheJobSucceedsOnceWritesReturn) {
  prefix_ = "jobs/tjctl-run-final-retried";
  WriteJob("20");
  StartRun();
  const std::string coordinator_log = CoordinatorLogPath();
  auto logs = [&] { return RunLogs(); };
  ASSERT_NO_FATAL_FAILURE(WithdrawWritesAfterTheFirstCheckpoint());

  std::string error;
  std::optional<local::ProcessExit> ended;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        error = Progress().value("checkpointError", std::string());
        ended = run_->WaitForExit(absl::ZeroDuration());
        return error.find(kFinalCheckpointObjects) != std::string::npos || ended.has_value();
      },
      absl::Seconds(240)))
      << logs();
  ASSERT_FALSE(ended.has_value()) << "the run ended (exit " << ended->exit_code
                                  << ") on the first refusal of its final save\n" << logs();
  EXPECT_THAT(error, ::testing::HasSubstr("refused"));
  EXPECT_LT(NewestCommitted(), kSteps) << "a manifest was written while writes are refused";

  ASSERT_NO_FATAL_FAILURE(ExpectSucceededOnceWritesReturn(absl::Seconds(120), "saved by a retry"));
  EXPECT_EQ(Progress()["lastCheckpointStep"], kSteps);
  EXPECT_THAT(Log(coordinator_log),
              ::testing::HasSubstr("final checkpoint at step 900 not saved (attempt 1 of 5)"));
}

// Writes refused until the end: every attempt of the final save fails, so the trained state is not
// saved and the job must not succeed. The coordinator ends with the restart code naming the
// location and the storage's answer; with backoffLimit 0 that restart fails the job. No manifest
// for step 900 exists and none is reported.
TEST_F(RunS3Test, AFinalSaveRefusedAtEveryAttemptIsNotASuccess) {
  prefix_ = "jobs/tjctl-run-final-refused";
  WriteJob("10", "  runPolicy: {backoffLimit: 0}\n");
  StartRun();
  const std::string coordinator_log = CoordinatorLogPath();
  auto logs = [&] { return RunLogs(); };
  ASSERT_NO_FATAL_FAILURE(WithdrawWritesAfterTheFirstCheckpoint());

  auto exit = run_->WaitForExit(absl::Seconds(300));
  ASSERT_TRUE(exit.has_value()) << logs();
  EXPECT_NE(exit->exit_code, 0) << logs();
  const nlohmann::json status = Status();
  EXPECT_EQ(status["phase"], "Failed") << status.dump();
  EXPECT_EQ(status["reason"], "BackoffLimitExceeded") << status.dump();
  EXPECT_EQ(status["replicas"]["digits-coordinator-0"]["lastExitCode"], 42) << status.dump();
  const nlohmann::json progress = Progress();
  EXPECT_EQ(progress["step"], kSteps);
  EXPECT_LT(progress.value("lastCheckpointStep", int64_t{-1}), kSteps) << progress.dump();
  const std::string error = progress.value("checkpointError", std::string());
  EXPECT_THAT(error, ::testing::HasSubstr(absl::StrCat("s3://", testing::kS3TestBucket, "/",
                                                       prefix_, "/", kFinalCheckpointObjects)));
  EXPECT_THAT(error, ::testing::HasSubstr("refused"));
  EXPECT_LT(NewestCommitted(), kSteps);
  EXPECT_LT(LatestValidStep(), kSteps);
  const std::string log = Log(coordinator_log);
  EXPECT_THAT(log, ::testing::HasSubstr("final checkpoint at step 900 not saved (attempt 5 of 5)"));
  EXPECT_THAT(log, ::testing::HasSubstr("final checkpoint at step 900 not saved after 5 attempts"));
  EXPECT_THAT(log, ::testing::HasSubstr("Exiting with the restart code 42"));
}

// Keys that may read the bucket but not write it from the start (the operator's bucket probe, a
// list, passes them): the coordinator's claim of the location is refused. It is held, not failed
// and not restarted: it reports the refusal (checkpointError naming the claim's object and the
// storage's answer), trains no step and writes nothing; once Write is granted its next attempt
// takes the location and the job trains to the end with its final checkpoint.
TEST_F(RunS3Test, WritesRefusedFromTheStartHoldTheJobUntilTheyReturn) {
  prefix_ = "jobs/tjctl-run-held";
  ASSERT_NO_FATAL_FAILURE(WithdrawWrites());
  StartRun();
  const std::string coordinator_log = CoordinatorLogPath();
  auto logs = [&] { return RunLogs(); };
  // Held: the refusal reported, and still reported after a few more attempts (1, 2, 4 s apart).
  auto held_attempts = [&] {
    const std::string log = Log(coordinator_log);
    int attempts = 0;
    for (size_t at = log.find("not taken at start"); at != std::string::npos;
         at = log.find("not taken at start", at + 1)) {
      ++attempts;
    }
    return attempts;
  };
  std::optional<local::ProcessExit> ended;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        ended = run_->WaitForExit(absl::ZeroDuration());
        return held_attempts() >= 3 || ended.has_value();
      },
      absl::Seconds(120)))
      << logs();
  ASSERT_FALSE(ended.has_value()) << "the run ended (exit " << ended->exit_code
                                  << ") on a refused claim\n" << logs();
  const nlohmann::json progress = Progress();
  EXPECT_EQ(progress.value("state", std::string()), "held") << progress.dump();
  const std::string error = progress.value("checkpointError", std::string());
  EXPECT_THAT(error, ::testing::HasSubstr(absl::StrCat("s3://", testing::kS3TestBucket, "/",
                                                       prefix_, "/")));
  EXPECT_THAT(error, ::testing::HasSubstr("PUT"));
  EXPECT_THAT(error, ::testing::HasSubstr("refused"));
  EXPECT_LE(progress.value("step", int64_t{0}), 0) << "trained while held";
  EXPECT_EQ(Status()["replicas"]["digits-coordinator-0"]["starts"], 1) << logs();
  EXPECT_EQ(NewestCommitted(), -1);

  ASSERT_NO_FATAL_FAILURE(
      ExpectSucceededOnceWritesReturn(absl::Seconds(300), "held, not restarted"));
  EXPECT_EQ(Progress()["step"], kSteps);
  ObjectCheckpointStore store(*objects_, url(), prefix_, 100);
  auto claimed = ReadClaimedGeneration(*objects_, store.ClaimKey());
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  EXPECT_GE(*claimed, start_ms_);
}

}  // namespace
}  // namespace tj
