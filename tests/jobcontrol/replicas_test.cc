#include "jobcontrol/replicas.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/jobcontrol/test_jobs.h"

namespace tj {
namespace {

using ::testing::ElementsAre;

TEST(ReplicasTest, Names) {
  EXPECT_EQ(ReplicaName("digits", ReplicaType::kCoordinator, 0), "digits-coordinator-0");
  EXPECT_EQ(ReplicaName("digits", ReplicaType::kPs, 1), "digits-ps-1");
  EXPECT_EQ(ReplicaName("digits", ReplicaType::kWorker, 12), "digits-worker-12");
  EXPECT_EQ(ReplicaName(testing_jobs::SmallJob(), {ReplicaType::kWorker, 1}), "digits-worker-1");
  EXPECT_EQ(DescribeReplica({ReplicaType::kPs, 0}), "ps 0");
}

TEST(ReplicasTest, DesiredReplicasInOrder) {
  std::vector<std::string> names;
  for (const Replica& r : DesiredReplicas(testing_jobs::SmallJob(2, 3))) names.push_back(r.name);
  EXPECT_THAT(names, ElementsAre("digits-coordinator-0", "digits-ps-0", "digits-ps-1",
                                 "digits-worker-0", "digits-worker-1", "digits-worker-2"));
  std::vector<Replica> replicas = DesiredReplicas(testing_jobs::SmallJob(2, 3));
  EXPECT_EQ(replicas[2].key, (ReplicaKey{ReplicaType::kPs, 1}));
}

TEST(ReplicasTest, MissingTypeHasNoReplicas) {
  v1alpha1::TrainingJob job = testing_jobs::SmallJob();
  job.spec.replica_specs.erase(ReplicaType::kPs);
  EXPECT_EQ(ReplicaCount(job.spec, ReplicaType::kPs), 0);
  EXPECT_EQ(DesiredReplicas(job).size(), 3u);
}

TEST(ReplicasTest, ClusterServiceAddresses) {
  ReplicaAddresses addresses = ClusterServiceAddresses(testing_jobs::SmallJob(), 2222);
  ASSERT_EQ(addresses.size(), 4u);
  EXPECT_EQ(addresses.at({ReplicaType::kCoordinator, 0}), "digits-coordinator-0.ml.svc:2222");
  EXPECT_EQ(addresses.at({ReplicaType::kWorker, 1}), "digits-worker-1.ml.svc:2222");

  v1alpha1::TrainingJob no_namespace = testing_jobs::SmallJob();
  no_namespace.metadata.namespace_name.clear();
  EXPECT_EQ(ClusterServiceAddresses(no_namespace, 1).at({ReplicaType::kPs, 0}),
            "digits-ps-0.default.svc:1");
}

}  // namespace
}  // namespace tj
