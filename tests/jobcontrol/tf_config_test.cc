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

// The renderer's output is nlohmann::json's own rendering of the config, byte for byte.
TEST(TfConfigTest, RendererMatchesJsonDump) {
  v1alpha1::TrainingJob job = testing_jobs::SmallJob(2, 3);
  absl::StatusOr<TfConfigRenderer> renderer =
      TfConfigRenderer::Create(job, ClusterServiceAddresses(job, 2222));
  ASSERT_TRUE(renderer.ok()) << renderer.status();
  absl::StatusOr<std::string> config = renderer->Render(ReplicaType::kPs, 1);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(*config, json::parse(*config).dump());
}

// The largest job allowed (1000 replicas), with the longest names allowed (a 49-character job in
// a 63-character namespace): each address is ~130 bytes, so TF_CONFIG would be ~135 KB, over the
// 128 KiB Linux accepts for one environment string. Refused, naming the job and the replica.
TEST(TfConfigTest, OverMaxArgStrlenNamesTheJobAndReplica) {
  v1alpha1::TrainingJob job = testing_jobs::SmallJob(1, 998);
  job.metadata.name = std::string(49, 'j');
  job.metadata.namespace_name = std::string(63, 'n');
  absl::StatusOr<TfConfigRenderer> renderer =
      TfConfigRenderer::Create(job, ClusterServiceAddresses(job, 2222));
  ASSERT_TRUE(renderer.ok()) << renderer.status();
  absl::Status fits = renderer->CheckAllFit();
  EXPECT_EQ(fits.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(fits.message()),
              HasSubstr(absl::StrCat("TF_CONFIG of job ", std::string(63, 'n'), "/",
                                     std::string(49, 'j'), " for worker 997 would be ")));
  EXPECT_THAT(std::string(fits.message()), HasSubstr("MAX_ARG_STRLEN"));
  EXPECT_THAT(std::string(fits.message()), HasSubstr("1000 replicas"));
  absl::StatusOr<std::string> config = renderer->Render(ReplicaType::kCoordinator, 0);
  EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(config.status().message()), HasSubstr("for coordinator 0 would be "));

  const v1alpha1::FieldErrors errors = CheckClusterTfConfigSize(job);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].field, "spec.replicaSpecs");
  EXPECT_THAT(errors[0].message, HasSubstr("MAX_ARG_STRLEN"));

  // The same job in a short namespace fits: ~75 bytes an address.
  job.metadata.namespace_name = "ml";
  EXPECT_TRUE(CheckClusterTfConfigSize(job).empty());
  renderer = TfConfigRenderer::Create(job, ClusterServiceAddresses(job, 2222));
  ASSERT_TRUE(renderer.ok());
  config = renderer->Render(ReplicaType::kWorker, 997);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_LE(config->size() + std::string("TF_CONFIG=").size() + 1, 128u * 1024);
  EXPECT_GT(config->size(), 70'000u);
}

}  // namespace
}  // namespace tj
