#include "jobcontrol/tf_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "coordinator/resolver/tf_config_cluster_resolver.h"
#include "nlohmann/json.hpp"
#include "tests/jobcontrol/test_jobs.h"

namespace tj {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

// tjctl run's addresses: 127.0.0.1 with a port per replica.
ReplicaAddresses LocalAddresses(const v1alpha1::TrainingJob& job) {
  ReplicaAddresses addresses;
  int port = 20000;
  for (const Replica& r : DesiredReplicas(job)) {
    addresses[r.key] = absl::StrCat("127.0.0.1:", port++);
  }
  return addresses;
}

TEST(TfConfigTest, TensorFlowFormat) {
  v1alpha1::TrainingJob job = testing_jobs::SmallJob();
  absl::StatusOr<std::string> config =
      RenderTfConfig(job, ClusterServiceAddresses(job, 2222), ReplicaType::kWorker, 1);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(json::parse(*config), json::parse(R"({
    "cluster": {"chief": ["digits-coordinator-0.ml.svc:2222"],
                "ps": ["digits-ps-0.ml.svc:2222"],
                "worker": ["digits-worker-0.ml.svc:2222", "digits-worker-1.ml.svc:2222"]},
    "task": {"type": "worker", "index": 1},
    "environment": "cloud"})"));
}

struct TaskCase {
  ReplicaType type;
  int index;
  std::string tf_type;
};

class TfConfigTaskTest : public ::testing::TestWithParam<TaskCase> {};

// The runtime's own resolver reads what the operator and tjctl run inject.
TEST_P(TfConfigTaskTest, RuntimeResolverReadsIt) {
  v1alpha1::TrainingJob job = testing_jobs::SmallJob(2, 3);
  absl::StatusOr<std::string> config =
      RenderTfConfig(job, LocalAddresses(job), GetParam().type, GetParam().index);
  ASSERT_TRUE(config.ok()) << config.status();
  auto resolver = TFConfigClusterResolver::FromJson(*config);
  ASSERT_TRUE(resolver.ok()) << resolver.status();
  EXPECT_EQ((*resolver)->task_type(), GetParam().tf_type);
  EXPECT_EQ((*resolver)->task_id(), GetParam().index);
  absl::StatusOr<ClusterSpec> spec = (*resolver)->cluster_spec();
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->num_tasks("chief"), 1);
  EXPECT_EQ(spec->num_tasks("ps"), 2);
  EXPECT_EQ(spec->num_tasks("worker"), 3);
  EXPECT_EQ(*spec->task_address("worker", 2), "127.0.0.1:20005");
}

INSTANTIATE_TEST_SUITE_P(Tasks, TfConfigTaskTest,
                         ::testing::Values(TaskCase{ReplicaType::kCoordinator, 0, "chief"},
                                           TaskCase{ReplicaType::kPs, 1, "ps"},
                                           TaskCase{ReplicaType::kWorker, 2, "worker"}),
                         [](const auto& info) { return info.param.tf_type; });

TEST(TfConfigTest, MissingAddressNamesTheReplica) {
  v1alpha1::TrainingJob job = testing_jobs::SmallJob();
  ReplicaAddresses addresses = LocalAddresses(job);
  addresses.erase({ReplicaType::kPs, 0});
  absl::StatusOr<std::string> config = RenderTfConfig(job, addresses, ReplicaType::kWorker, 0);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("no address for digits-ps-0"));
}

TEST(TfConfigTest, TaskOutsideTheJob) {
  v1alpha1::TrainingJob job = testing_jobs::SmallJob();
  EXPECT_FALSE(RenderTfConfig(job, LocalAddresses(job), ReplicaType::kWorker, 2).ok());
  EXPECT_FALSE(RenderTfConfig(job, LocalAddresses(job), ReplicaType::kCoordinator, -1).ok());
}

TEST(TfConfigTest, ExtraAddressesAreIgnored) {
  v1alpha1::TrainingJob job = testing_jobs::SmallJob();
  ReplicaAddresses addresses = LocalAddresses(job);
  addresses[{ReplicaType::kWorker, 7}] = "127.0.0.1:1";
  absl::StatusOr<std::string> config = RenderTfConfig(job, addresses, ReplicaType::kPs, 0);
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(json::parse(*config)["cluster"]["worker"].size(), 2u);
}

}  // namespace
}  // namespace tj
