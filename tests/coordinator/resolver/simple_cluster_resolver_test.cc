#include "coordinator/resolver/simple_cluster_resolver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace tj {
namespace {

using ::testing::HasSubstr;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

ClusterSpec Spec() {
  return *ClusterSpec::FromJobs(
      {{"chief", {"c:1"}}, {"ps", {"p:1"}}, {"worker", {"w0:1", "w1:1"}}});
}

TEST(SimpleClusterResolverTest, ReturnsItsSpecAndIdentity) {
  SimpleClusterResolver resolver(
      Spec(), {.task_type = "worker", .task_id = 1, .rpc_layer = "grpc", .environment = "cloud"});
  EXPECT_EQ(*resolver.cluster_spec(), Spec());
  EXPECT_EQ(resolver.task_type(), "worker");
  EXPECT_EQ(resolver.task_id(), 1);
  EXPECT_EQ(resolver.rpc_layer(), "grpc");
  EXPECT_EQ(resolver.environment(), "cloud");
}

TEST(SimpleClusterResolverTest, MasterLooksUpOwnOrNamedTask) {
  SimpleClusterResolver resolver(Spec(), {.task_type = "worker", .task_id = 1});
  EXPECT_EQ(*resolver.master(), "w1:1");
  EXPECT_EQ(*resolver.master("ps", 0), "p:1");
  EXPECT_EQ(*resolver.master("chief", 0, "grpc"), "grpc://c:1");
  EXPECT_EQ(*resolver.master(std::nullopt, 0), "w0:1");
  resolver.set_rpc_layer("grpc");
  EXPECT_EQ(*resolver.master(), "grpc://w1:1");
  EXPECT_EQ(*resolver.master("ps", 0, "grpc+verbs"), "grpc+verbs://p:1");
  resolver.set_task_type("chief");
  resolver.set_task_id(0);
  EXPECT_EQ(*resolver.master(), "grpc://c:1");
}

TEST(SimpleClusterResolverTest, ExplicitMasterWinsUnlessTaskIsFullyNamed) {
  SimpleClusterResolver resolver(
      Spec(), {.task_type = "worker", .task_id = 0, .rpc_layer = "grpc", .master = "m:9"});
  EXPECT_EQ(*resolver.master(), "grpc://m:9");
  EXPECT_EQ(*resolver.master("ps"), "grpc://m:9");
  EXPECT_EQ(*resolver.master(std::nullopt, std::nullopt, "http"), "http://m:9");
  EXPECT_EQ(*resolver.master("ps", 0), "grpc://p:1");
}

TEST(SimpleClusterResolverTest, MasterErrorsAreClear) {
  SimpleClusterResolver no_identity(Spec());
  absl::StatusOr<std::string> none = no_identity.master();
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(none.status()), HasSubstr("no task_type"));

  SimpleClusterResolver off_cluster(Spec(), {.task_type = "evaluator", .task_id = 0});
  absl::StatusOr<std::string> unknown = off_cluster.master();
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(unknown.status()), HasSubstr("\"evaluator\" is not in the cluster spec"));

  EXPECT_EQ(off_cluster.master("worker", 2).status().code(), absl::StatusCode::kNotFound);
}

TEST(SimpleClusterResolverTest, NumAcceleratorsComesFromOptions) {
  SimpleClusterResolver none(Spec());
  EXPECT_TRUE(none.num_accelerators()->empty());
  SimpleClusterResolver gpus(Spec(), {.num_accelerators = {{"GPU", 4}, {"TPU", 0}}});
  absl::StatusOr<AcceleratorCounts> counts = gpus.num_accelerators("worker", 0);
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(*counts, (AcceleratorCounts{{"GPU", 4}, {"TPU", 0}}));
}

TEST(SimpleClusterResolverTest, FormatMasterUrl) {
  EXPECT_EQ(FormatMasterUrl("h:1", ""), "h:1");
  EXPECT_EQ(FormatMasterUrl("h:1", "grpc"), "grpc://h:1");
  EXPECT_EQ(FormatMasterUrl("[::1]:1", "grpc"), "grpc://[::1]:1");
}

}  // namespace
}  // namespace tj
