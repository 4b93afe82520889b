// The environment the operator and `tjctl run` give every replica.
#include "jobcontrol/replica_env.h"

#include <map>

#include "api/v1alpha1/defaults.h"
#include "api/v1alpha1/runtime_env.h"
#include "gtest/gtest.h"
#include "tests/jobcontrol/test_jobs.h"

namespace tj {
namespace {

namespace env = v1alpha1::env;

std::map<std::string, std::string> AsMap(const EnvList& list) {
  return std::map<std::string, std::string>(list.begin(), list.end());
}

TEST(ReplicaEnvTest, DefaultsWhenTheJobSetsNothing) {
  auto job = testing_jobs::SmallJob();
  job.spec.fault_tolerance = {};
  job.spec.preemption = {};
  const EnvList list =
      ReplicaEnvironment(job, {v1alpha1::ReplicaType::kWorker, 1}, R"({"task":{}})");
  ASSERT_FALSE(list.empty());
  EXPECT_EQ(list.front().first, env::kTfConfig);
  const auto vars = AsMap(list);
  EXPECT_EQ(vars.at(env::kTfConfig), R"({"task":{}})");
  EXPECT_EQ(vars.at(env::kJobName), "digits");
  EXPECT_EQ(vars.at(env::kJobNamespace), "ml");
  EXPECT_EQ(vars.at(env::kReplicaType), "Worker");
  EXPECT_EQ(vars.at(env::kReplicaIndex), "1");
  EXPECT_EQ(vars.at(env::kReplicaName), "digits-worker-1");
  EXPECT_EQ(vars.at(env::kRestartExitCode), "42");
  EXPECT_EQ(vars.at(env::kWorkerRecoveryTimeoutSeconds), "3600");
  EXPECT_EQ(vars.at(env::kTransientPsFailureThreshold), "3");
  EXPECT_EQ(vars.at(env::kPreemptionGracePeriodSeconds), "0");
  EXPECT_FALSE(vars.contains(env::kCheckpointDir)) << "no spec.checkpoint, no checkpoint env";
}

TEST(ReplicaEnvTest, CarriesTheJobsSettings) {
  auto job = testing_jobs::SmallJob();
  job.metadata.namespace_name.clear();
  job.spec.fault_tolerance.restart_exit_codes = std::vector<int32_t>{75, 42};
  job.spec.fault_tolerance.worker_recovery_timeout_seconds = 60;
  job.spec.fault_tolerance.transient_ps_failure_threshold = 0;
  job.spec.preemption.grace_period_seconds = 20;
  v1alpha1::CheckpointSpec checkpoint;
  checkpoint.dir = "/ckpt/digits";
  checkpoint.interval_steps = 100;
  checkpoint.keep = 5;
  checkpoint.full_every = 4;
  job.spec.checkpoint = checkpoint;
  const auto vars =
      AsMap(ReplicaEnvironment(job, {v1alpha1::ReplicaType::kCoordinator, 0}, "{}"));
  EXPECT_EQ(vars.at(env::kJobNamespace), "default");
  EXPECT_EQ(vars.at(env::kReplicaType), "Coordinator");
  EXPECT_EQ(vars.at(env::kRestartExitCode), "75") << "the first restart exit code";
  EXPECT_EQ(vars.at(env::kWorkerRecoveryTimeoutSeconds), "60");
  EXPECT_EQ(vars.at(env::kTransientPsFailureThreshold), "0");
  EXPECT_EQ(vars.at(env::kPreemptionGracePeriodSeconds), "20");
  EXPECT_EQ(vars.at(env::kCheckpointDir), "/ckpt/digits");
  EXPECT_EQ(vars.at(env::kCheckpointIntervalSteps), "100");
  EXPECT_EQ(vars.at(env::kCheckpointKeep), "5");
  EXPECT_EQ(vars.at(env::kCheckpointFullEvery), "4");
  job.spec.checkpoint->full_every.reset();
  EXPECT_EQ(AsMap(ReplicaEnvironment(job, {v1alpha1::ReplicaType::kCoordinator, 0}, "{}"))
                .at(env::kCheckpointFullEvery),
            std::to_string(v1alpha1::kDefaultCheckpointFullEvery));

  const auto local = AsMap(
      ReplicaEnvironment(job, {v1alpha1::ReplicaType::kPs, 0}, "{}", "/tmp/run/checkpoints"));
  EXPECT_EQ(local.at(env::kCheckpointDir), "/tmp/run/checkpoints");
}

TEST(ReplicaEnvTest, MergeReplacesInPlaceAndAppendsTheRest) {
  EnvList user = {{"TF_CONFIG", "user's"}, {"A", "1"}};
  EnvList merged = MergeEnvironment(user, {{"TF_CONFIG", "ours"}, {"B", "2"}});
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0], (std::pair<std::string, std::string>{"TF_CONFIG", "ours"}));
  EXPECT_EQ(merged[1].first, "A");
  EXPECT_EQ(merged[2], (std::pair<std::string, std::string>{"B", "2"}));
}

}  // namespace
}  // namespace tj
