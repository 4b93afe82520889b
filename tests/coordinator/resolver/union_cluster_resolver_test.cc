#include "coordinator/resolver/union_cluster_resolver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/resolver/simple_cluster_resolver.h"
#include "nlohmann/json.hpp"

namespace tj {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

ClusterResolverPtr Simple(std::string_view spec_json, SimpleClusterResolverOptions options = {}) {
  absl::StatusOr<ClusterSpec> spec = ClusterSpec::FromJsonText(spec_json);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return std::make_unique<SimpleClusterResolver>(spec.ok() ? *spec : ClusterSpec(),
                                                 std::move(options));
}

std::unique_ptr<UnionClusterResolver> Union(std::vector<ClusterResolverPtr> resolvers,
                                            UnionClusterResolverOverrides overrides = {}) {
  auto resolver = UnionClusterResolver::Create(std::move(resolvers), std::move(overrides));
  EXPECT_TRUE(resolver.ok()) << resolver.status();
  return resolver.ok() ? *std::move(resolver) : nullptr;
}

template <typename... R>
std::vector<ClusterResolverPtr> List(R... resolvers) {
  std::vector<ClusterResolverPtr> list;
  (list.push_back(std::move(resolvers)), ...);
  return list;
}

// A resolver whose answer the test controls, to show the union asks again on every call.
class ScriptedResolver final : public ClusterResolver {
 public:
  explicit ScriptedResolver(absl::StatusOr<ClusterSpec>* answer)
      : ClusterResolver(std::nullopt, std::nullopt, "", ""), answer_(answer) {}
  absl::StatusOr<ClusterSpec> cluster_spec() const override { return *answer_; }

 private:
  absl::StatusOr<ClusterSpec>* answer_;
};

TEST(UnionClusterResolverTest, DisjointJobsAreCombined) {
  auto resolver = Union(List(Simple(R"({"ps": ["p0:1", "p1:1"]})"),
                             Simple(R"({"chief": ["c:1"], "worker": ["w0:1"]})")));
  ASSERT_NE(resolver, nullptr);
  absl::StatusOr<ClusterSpec> spec = resolver->cluster_spec();
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->jobs(), ElementsAre("chief", "ps", "worker"));
  EXPECT_EQ(spec->num_tasks("ps"), 2);
  EXPECT_EQ(*resolver->master("worker", 0, "grpc"), "grpc://w0:1");
}

TEST(UnionClusterResolverTest, SameJobListsAreConcatenatedInResolverOrder) {
  auto resolver = Union(List(Simple(R"({"worker": ["a:1", "b:1"]})"),
                             Simple(R"({"ps": ["p:1"], "worker": ["c:1"]})")));
  ASSERT_NE(resolver, nullptr);
  absl::StatusOr<ClusterSpec> spec = resolver->cluster_spec();
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->as_json()["worker"], nlohmann::json::parse(R"(["a:1", "b:1", "c:1"])"));
  EXPECT_EQ(*resolver->master("worker", 2), "c:1");
}

TEST(UnionClusterResolverTest, SparseJobsMergeByIndex) {
  auto resolver = Union(List(Simple(R"({"worker": {"0": "a:1", "3": "d:1"}})"),
                             Simple(R"({"worker": ["x:1", "y:1"]})")));
  ASSERT_NE(resolver, nullptr);
  // The list form counts as indices 0 and 1, and index 0 is already taken.
  absl::StatusOr<ClusterSpec> clash = resolver->cluster_spec();
  EXPECT_EQ(clash.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(clash.status()), HasSubstr("merging resolver 1"));
  EXPECT_THAT(Message(clash.status()), HasSubstr("/job:worker/task:0"));
  EXPECT_THAT(Message(clash.status()), HasSubstr("earlier resolver"));

  auto fits = Union(List(Simple(R"({"worker": {"1": "b:1", "3": "d:1"}})"),
                         Simple(R"({"worker": {"0": "a:1", "2": "c:1"}})")));
  ASSERT_NE(fits, nullptr);
  absl::StatusOr<ClusterSpec> spec = fits->cluster_spec();
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->as_json()["worker"], nlohmann::json::parse(R"(["a:1", "b:1", "c:1", "d:1"])"));
}

TEST(UnionClusterResolverTest, DuplicateAddressAcrossResolversIsRejected) {
  auto resolver =
      Union(List(Simple(R"({"ps": ["h:1"]})"), Simple(R"({"worker": ["w:1", "h:1"]})")));
  ASSERT_NE(resolver, nullptr);
  absl::StatusOr<ClusterSpec> spec = resolver->cluster_spec();
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(spec.status()), HasSubstr("\"h:1\""));
  EXPECT_THAT(Message(spec.status()), HasSubstr("/job:worker/task:1"));
  EXPECT_THAT(Message(spec.status()), HasSubstr("/job:ps/task:0"));
  EXPECT_EQ(resolver->master("ps", 0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(UnionClusterResolverTest, IdentityComesFromFirstResolver) {
  auto resolver =
      Union(List(Simple(R"({"worker": ["w0:1", "w1:1"]})", {.task_type = "worker",
                                                            .task_id = 1,
                                                            .rpc_layer = "grpc",
                                                            .environment = "cloud",
                                                            .num_accelerators = {{"GPU", 2}}}),
                 Simple(R"({"ps": ["p:1"]})", {.task_type = "ps", .task_id = 0})));
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->task_type(), "worker");
  EXPECT_EQ(resolver->task_id(), 1);
  EXPECT_EQ(resolver->rpc_layer(), "grpc");
  EXPECT_EQ(resolver->environment(), "cloud");
  EXPECT_EQ(*resolver->master(), "grpc://w1:1");
  EXPECT_EQ(*resolver->num_accelerators(), (AcceleratorCounts{{"GPU", 2}}));
}

TEST(UnionClusterResolverTest, OverridesReplaceFirstResolversIdentity) {
  auto resolver =
      Union(List(Simple(R"({"worker": ["w0:1"]})",
                        {.task_type = "worker", .task_id = 0, .rpc_layer = "grpc"}),
                 Simple(R"({"ps": ["p0:1", "p1:1"]})")),
            {.task_type = "ps", .task_id = 1, .rpc_layer = "", .environment = "on-prem"});
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->task_type(), "ps");
  EXPECT_EQ(resolver->rpc_layer(), "");
  EXPECT_EQ(resolver->environment(), "on-prem");
  // The task lives in the second resolver: only the merged spec can answer.
  EXPECT_EQ(*resolver->master(), "p1:1");
}

TEST(UnionClusterResolverTest, WithoutOwnTaskFirstResolverAnswersMaster) {
  auto resolver = Union(
      List(Simple(R"({"worker": ["w0:1"]})", {.master = "m:7"}), Simple(R"({"ps": ["p:1"]})")));
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(*resolver->master(), "m:7");
  EXPECT_EQ(*resolver->master(std::nullopt, std::nullopt, "grpc"), "grpc://m:7");
  EXPECT_EQ(*resolver->master("ps", 0), "p:1");

  auto no_master = Union(List(Simple(R"({"worker": ["w0:1"]})")));
  ASSERT_NE(no_master, nullptr);
  EXPECT_EQ(no_master->master().status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(UnionClusterResolverTest, AsksResolversOnEveryCallAndPropagatesErrors) {
  absl::StatusOr<ClusterSpec> answer = *ClusterSpec::FromJobs({{"worker", {"w0:1"}}});
  auto resolver = Union(List(Simple(R"({"ps": ["p:1"]})"),
                             ClusterResolverPtr(std::make_unique<ScriptedResolver>(&answer))));
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->cluster_spec()->num_tasks("worker"), 1);

  answer = *ClusterSpec::FromJobs({{"worker", {"w0:1", "w1:1"}}});
  EXPECT_EQ(resolver->cluster_spec()->num_tasks("worker"), 2);
  EXPECT_EQ(*resolver->master("worker", 1), "w1:1");

  answer = absl::UnavailableError("apiserver down");
  absl::StatusOr<ClusterSpec> spec = resolver->cluster_spec();
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(Message(spec.status()), HasSubstr("resolver 1: apiserver down"));
}

TEST(UnionClusterResolverTest, CreateRejectsEmptyAndNull) {
  auto empty = UnionClusterResolver::Create({});
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(empty.status()), HasSubstr("at least one"));

  std::vector<ClusterResolverPtr> with_null;
  with_null.push_back(Simple(R"({"ps": ["p:1"]})"));
  with_null.push_back(nullptr);
  auto null = UnionClusterResolver::Create(std::move(with_null));
  EXPECT_EQ(null.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(null.status()), HasSubstr("resolver 1 is null"));
}

TEST(UnionClusterResolverTest, UnionsNest) {
  auto inner = Union(List(Simple(R"({"ps": ["p:1"]})"), Simple(R"({"worker": ["a:1"]})")));
  ASSERT_NE(inner, nullptr);
  auto outer = Union(List(ClusterResolverPtr(std::move(inner)), Simple(R"({"worker": ["b:1"]})")));
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->cluster_spec()->as_json(),
            nlohmann::json::parse(R"({"ps": ["p:1"], "worker": ["a:1", "b:1"]})"));
}

}  // namespace
}  // namespace tj
