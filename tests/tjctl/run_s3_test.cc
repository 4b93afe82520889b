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

constexpr int64_t kSteps = testing::kDigitsSteps;
constexpr char kPrefix[] = "jobs/tjctl-run-digits";

class RunS3Test : public ::testing::Test {
 protected:
  void SetUp() override {
    TJ_REQUIRE_S3_SERVER();
    if (!std::filesystem::exists(testing::kDigitsData)) GTEST_SKIP() << "python3-sklearn absent";
    const S3Options options = S3TestEnvironment::server()->Options();
    std::ofstream(dir_.Join("job.yaml")) << testing::DigitsJobYaml(
        TJ_TRAIN_BINARY,
        absl::StrCat(", env: [{name: TJ_S3_ENDPOINT, value: \"", options.endpoint,
                     "\"}, {name: TJ_S3_PART_BYTES, value: \"", kMinS3PartBytes, "\"}]"));
    objects_ = std::make_unique<S3ObjectStore>(options, testing::kS3TestBucket);
  }

  std::string url() const { return absl::StrCat("s3://", testing::kS3TestBucket, "/", kPrefix); }
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

  nlohmann::json Status() const { return testing::ReadJsonFile(work_dir() + "/status.json"); }
  int64_t Step() const {
    return testing::ReadJsonFile(work_dir() + "/progress.json").value("step", int64_t{-1});
  }
  std::string Log(const std::string& path) const {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Whether the bucket holds a committed checkpoint of at least `step`.
  bool CommittedAtLeast(int64_t step) const {
    ObjectCheckpointStore store(*objects_, url(), kPrefix, 100);
    auto listed = store.List();
    if (!listed.ok()) return false;
    for (const CheckpointListing& listing : *listed) {
      if (listing.committed && listing.step >= step) return true;
    }
    return false;
  }

  testing::TempDir dir_;
  std::unique_ptr<S3ObjectStore> objects_;
  std::unique_ptr<local::ChildProcess> run_;
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
  ObjectCheckpointStore store(*objects_, url(), kPrefix, 100);
  auto latest = store.LatestValid();
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  EXPECT_GE((*latest)->step, 800);
  auto claimed = ReadClaimedGeneration(*objects_, store.ClaimKey());
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  // Generations tjctl hands out are at least the wall clock in milliseconds at the start.
  EXPECT_GE(*claimed, start_ms_) << "the claim is not of a coordinator of this run";
}

}  // namespace
}  // namespace tj
