// The SDK example (examples/sdk-linear-regression): a program with its own train-step function,
// run as real processes, learns the true parameters; a longer run resumes from its checkpoint.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/trainer/train/train_cluster.h"

namespace tj::testing {
namespace {

TEST(SdkExampleTest, LearnsTheParametersAndALongerRunResumesFromTheCheckpoint) {
  TrainCluster cluster(1, 2, TJ_SDK_EXAMPLE_BINARY);
  cluster.env()["TJ_CHECKPOINT_INTERVAL_STEPS"] = "100";
  cluster.StartServers();
  const std::vector<std::string> args = {"--steps=600", "--max-error=0.05"};
  cluster.StartChief(args);
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  auto progress = cluster.Progress();
  ASSERT_TRUE(progress.has_value());
  EXPECT_EQ(progress->step, 600);
  EXPECT_LT(progress->metrics.at("parameter_error"), 0.05);

  // A longer run of the same program resumes at the final checkpoint of the first.
  cluster.StartChief({"--steps=800", "--max-error=0.05"});
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  EXPECT_EQ(cluster.Progress()->restored_from_step, 600);
  EXPECT_EQ(cluster.Progress()->step, 800);
}

}  // namespace
}  // namespace tj::testing
