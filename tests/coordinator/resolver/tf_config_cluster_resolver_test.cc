#include "coordinator/resolver/tf_config_cluster_resolver.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace tj {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

constexpr char kFullConfig[] = R"({
  "cluster": {"chief": ["c:2222"], "ps": ["p0:2222", "p1:2222"], "worker": ["w0:2222", "w1:2222"]},
  "task": {"type": "worker", "index": 1},
  "environment": "cloud",
  "rpc_layer": "grpc"
})";

std::unique_ptr<TFConfigClusterResolver> MustParse(std::string_view json) {
  absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>> resolver =
      TFConfigClusterResolver::FromJson(json);
  EXPECT_TRUE(resolver.ok()) << resolver.status();
  return resolver.ok() ? *std::move(resolver) : nullptr;
}

// Sets (or unsets) TF_CONFIG for one test and puts the previous value back.
class ScopedTfConfig {
 public:
  explicit ScopedTfConfig(std::optional<std::string> value) {
    if (const char* old = std::getenv("TF_CONFIG")) old_ = old;
    if (value.has_value()) {
      setenv("TF_CONFIG", value->c_str(), 1);
    } else {
      unsetenv("TF_CONFIG");
    }
  }
  ~ScopedTfConfig() {
    if (old_.has_value()) {
      setenv("TF_CONFIG", old_->c_str(), 1);
    } else {
      unsetenv("TF_CONFIG");
    }
  }

 private:
  std::optional<std::string> old_;
};

TEST(TFConfigClusterResolverTest, ParsesFullConfig) {
  auto resolver = MustParse(kFullConfig);
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->task_type(), "worker");
  EXPECT_EQ(resolver->task_id(), 1);
  EXPECT_EQ(resolver->rpc_layer(), "grpc");
  EXPECT_EQ(resolver->environment(), "cloud");
  absl::StatusOr<ClusterSpec> spec = resolver->cluster_spec();
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->jobs(), ElementsAre("chief", "ps", "worker"));
  EXPECT_EQ(spec->num_tasks("ps"), 2);
  EXPECT_EQ(*spec->task_address("worker", 1), "w1:2222");
  EXPECT_TRUE(resolver->num_accelerators()->empty());
}

TEST(TFConfigClusterResolverTest, MasterUsesOwnTaskAndRpcLayer) {
  auto resolver = MustParse(kFullConfig);
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(*resolver->master(), "grpc://w1:2222");
  EXPECT_EQ(*resolver->master("chief", 0), "grpc://c:2222");
  EXPECT_EQ(*resolver->master("ps", 1, "grpc+verbs"), "grpc+verbs://p1:2222");
  // Only one of the pair given: the other comes from the resolver's own task.
  EXPECT_EQ(*resolver->master(std::nullopt, 0), "grpc://w0:2222");
  EXPECT_EQ(*resolver->master("ps"), "grpc://p1:2222");
}

TEST(TFConfigClusterResolverTest, MasterWithoutRpcLayerIsBareAddress) {
  auto resolver = MustParse(
      R"({"cluster": {"chief": ["c:2222"], "worker": ["w0:1"]},
          "task": {"type": "chief", "index": 0}})");
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->rpc_layer(), "");
  EXPECT_EQ(resolver->environment(), "");
  EXPECT_EQ(*resolver->master(), "c:2222");
  EXPECT_EQ(*resolver->master("worker", 0), "w0:1");
  EXPECT_EQ(*resolver->master("worker", 0, "grpc"), "grpc://w0:1");
}

TEST(TFConfigClusterResolverTest, MasterReportsUnknownTasks) {
  auto resolver = MustParse(kFullConfig);
  ASSERT_NE(resolver, nullptr);
  absl::StatusOr<std::string> bad_index = resolver->master("worker", 7);
  EXPECT_EQ(bad_index.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(bad_index.status()), HasSubstr("no task 7"));
  absl::StatusOr<std::string> bad_job = resolver->master("evaluator", 0);
  EXPECT_EQ(bad_job.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(bad_job.status()), HasSubstr("\"evaluator\""));
}

TEST(TFConfigClusterResolverTest, ConfigWithoutTaskLeavesIdentityUnset) {
  auto resolver = MustParse(R"({"cluster": {"ps": ["p:1"], "worker": ["w:1"]}})");
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->task_type(), std::nullopt);
  EXPECT_EQ(resolver->task_id(), std::nullopt);
  EXPECT_EQ(*resolver->master("ps", 0), "p:1");
  absl::StatusOr<std::string> own = resolver->master();
  EXPECT_EQ(own.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(own.status()), HasSubstr("task_type"));
  absl::StatusOr<std::string> no_id = resolver->master("ps");
  EXPECT_EQ(no_id.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(no_id.status()), HasSubstr("task_id"));
}

TEST(TFConfigClusterResolverTest, SettersChangeIdentity) {
  auto resolver = MustParse(R"({"cluster": {"ps": ["p:1"], "worker": ["w:1", "w:2"]}})");
  ASSERT_NE(resolver, nullptr);
  resolver->set_task_type("worker");
  resolver->set_task_id(1);
  resolver->set_rpc_layer("grpc");
  EXPECT_EQ(*resolver->master(), "grpc://w:2");
  resolver->set_task_id(std::nullopt);
  EXPECT_EQ(resolver->master().status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(TFConfigClusterResolverTest, EmptyObjectIsAnEmptyCluster) {
  auto resolver = MustParse("{}");
  ASSERT_NE(resolver, nullptr);
  EXPECT_TRUE(resolver->cluster_spec()->empty());
  EXPECT_EQ(resolver->task_type(), std::nullopt);
}

TEST(TFConfigClusterResolverTest, NullMembersCountAsAbsentAndUnknownKeysAreIgnored) {
  auto resolver = MustParse(
      R"({"cluster": {"worker": ["w:1"]}, "task": null, "rpc_layer": null, "environment": null,
          "session_master": "whatever"})");
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->task_type(), std::nullopt);
  EXPECT_EQ(resolver->rpc_layer(), "");
}

TEST(TFConfigClusterResolverTest, AcceptsDigitStringIndexLikeTensorFlow) {
  auto resolver = MustParse(
      R"({"cluster": {"worker": ["w:1", "w:2"]}, "task": {"type": "worker", "index": "1"}})");
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(resolver->task_id(), 1);
}

TEST(TFConfigClusterResolverTest, SparseTaskIndices) {
  auto resolver = MustParse(R"({"cluster": {"worker": {"0": "w:1", "2": "w:3"}},
                                 "task": {"type": "worker", "index": 2}})");
  ASSERT_NE(resolver, nullptr);
  EXPECT_EQ(*resolver->master(), "w:3");
  absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>> gap = TFConfigClusterResolver::FromJson(
      R"({"cluster": {"worker": {"0": "w:1", "2": "w:3"}},
          "task": {"type": "worker", "index": 1}})");
  EXPECT_EQ(gap.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(gap.status()), HasSubstr("task.index: 1 is out of range"));
}

TEST(TFConfigClusterResolverTest, FromEnvironmentReadsTfConfig) {
  ScopedTfConfig env{std::string(kFullConfig)};
  absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>> resolver =
      TFConfigClusterResolver::FromEnvironment();
  ASSERT_TRUE(resolver.ok()) << resolver.status();
  EXPECT_EQ(*(*resolver)->master(), "grpc://w1:2222");
}

TEST(TFConfigClusterResolverTest, FromEnvironmentWithoutTfConfigIsNotFound) {
  ScopedTfConfig env(std::nullopt);
  absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>> resolver =
      TFConfigClusterResolver::FromEnvironment();
  EXPECT_EQ(resolver.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(resolver.status()), HasSubstr("TF_CONFIG is not set"));
}

TEST(TFConfigClusterResolverTest, FromEnvironmentErrorsNameTfConfig) {
  ScopedTfConfig env(std::string(R"({"cluster": {"worker": ["w"]}})"));
  absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>> resolver =
      TFConfigClusterResolver::FromEnvironment();
  EXPECT_EQ(resolver.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(resolver.status()), HasSubstr("TF_CONFIG: cluster.worker[0]: "));
}

TEST(TFConfigClusterResolverTest, SourceNameStartsMessages) {
  absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>> resolver =
      TFConfigClusterResolver::FromJson("[]", "/etc/tf_config.json");
  EXPECT_THAT(Message(resolver.status()), HasSubstr("/etc/tf_config.json: must be a JSON object"));
}

struct MalformedCase {
  std::string name;
  std::string json;
  std::vector<std::string> expected;  // substrings of the message
};

std::string Nested(int depth, std::string_view open, std::string_view close) {
  std::string text;
  for (int i = 0; i < depth; ++i) text += open;
  for (int i = 0; i < depth; ++i) text += close;
  return text;
}

std::string WorkersWithTask(std::string_view task) {
  return std::string(R"({"cluster": {"ps": ["p:1"], "worker": ["w:1", "w:2"]}, "task": )") +
         std::string(task) + "}";
}

std::vector<MalformedCase> MalformedCases() {
  return {
      {"empty", "", {"TF_CONFIG: not valid JSON", "line 1, column 1"}},
      {"whitespace", "   \n ", {"not valid JSON", "line 2"}},
      {"null", "null", {"TF_CONFIG: must be a JSON object", "got null"}},
      {"array", "[]", {"must be a JSON object", "got array"}},
      {"number", "42", {"got integer"}},
      {"string", R"("cluster")", {"got string"}},
      {"truncated", R"({"cluster": {"worker": ["w:1")", {"not valid JSON", "column"}},
      {"trailing garbage", R"({"cluster": {}} x)", {"not valid JSON", "column 17"}},
      {"binary", "\xff\xfe\x00\x01", {"not valid JSON"}},
      {"embedded NUL", std::string("{\"task\":\0}", 10), {"not valid JSON"}},
      {"single quotes", "{'cluster': {}}", {"not valid JSON"}},
      {"deep arrays", Nested(100000, "[", "]"), {"not valid JSON", "nested deeper than 64"}},
      {"deep objects unclosed", std::string(50000, '{'), {"nested deeper than 64"}},
      {"deep inside cluster",
       R"({"cluster": {"worker": )" + Nested(40, "[", "]") + "}}",
       {"cluster.worker[0]: must be a \"host:port\" string, got array"}},
      {"float overflow", R"({"task": {"type": "worker", "index": 1e400}})", {"not valid JSON"}},
      {"cluster array", R"({"cluster": ["w:1"]})", {"TF_CONFIG: cluster: must be an object"}},
      {"cluster string", R"({"cluster": "w:1"})", {"cluster: must be an object", "got string"}},
      {"job string",
       R"({"cluster": {"worker": "w:1"}})",
       {"cluster.worker: must be a list of \"host:port\" strings", "got string"}},
      {"job number", R"({"cluster": {"worker": 3}})", {"cluster.worker: ", "got integer"}},
      {"task not string",
       R"({"cluster": {"worker": ["w:1", 2]}})",
       {"cluster.worker[1]: must be a \"host:port\" string, got integer"}},
      {"task null", R"({"cluster": {"worker": [null]}})", {"cluster.worker[0]:", "got null"}},
      {"no port",
       R"({"cluster": {"worker": ["w"]}})",
       {"cluster.worker[0]: address \"w\" has no port"}},
      {"empty port", R"({"cluster": {"ps": ["p:"]}})", {"cluster.ps[0]:", "empty port"}},
      {"non-numeric port",
       R"({"cluster": {"worker": ["w:1", "w:http"]}})",
       {"cluster.worker[1]:", "non-numeric port \"http\""}},
      {"port too big",
       R"({"cluster": {"worker": ["w:65536"]}})",
       {"cluster.worker[0]:", "outside 1-65535"}},
      {"port zero", R"({"cluster": {"worker": ["w:0"]}})", {"outside 1-65535"}},
      {"scheme in address",
       R"({"cluster": {"worker": ["grpc://w:1"]}})",
       {"cluster.worker[0]:", "URL scheme"}},
      {"bad job name",
       R"({"cluster": {"work er": ["w:1"]}})",
       {"cluster: job name \"work er\" is invalid"}},
      {"bad sparse key",
       R"({"cluster": {"worker": {"one": "w:1"}}})",
       {"cluster.worker[\"one\"]:"}},
      {"duplicate across jobs",
       R"({"cluster": {"ps": ["h:1"], "worker": ["w:1", "h:1"]}})",
       {"cluster.worker[1]:", "/job:worker/task:1", "/job:ps/task:0", "\"h:1\""}},
      {"duplicate within job",
       R"({"cluster": {"worker": ["h:1", "h:1"]}})",
       {"/job:worker/task:1", "/job:worker/task:0"}},
      {"task string",
       WorkersWithTask(R"("worker")"),
       {"TF_CONFIG: task: must be an object", "got string"}},
      {"task array", WorkersWithTask("[]"), {"task: must be an object"}},
      {"task empty", WorkersWithTask("{}"), {"task.type: missing"}},
      {"task without type", WorkersWithTask(R"({"index": 0})"), {"task.type: missing"}},
      {"type not string",
       WorkersWithTask(R"({"type": 1, "index": 0})"),
       {"task.type: must be a string, got integer"}},
      {"type not in cluster",
       WorkersWithTask(R"({"type": "evaluator", "index": 0})"),
       {"task.type: \"evaluator\" is not a job in \"cluster\"", "ps, worker"}},
      {"task without cluster",
       R"({"task": {"type": "worker", "index": 0}})",
       {"task.type: \"worker\" is not a job", "jobs: none"}},
      {"task without index", WorkersWithTask(R"({"type": "worker"})"), {"task.index: missing"}},
      {"index negative",
       WorkersWithTask(R"({"type": "worker", "index": -1})"),
       {"task.index: must be >= 0, got -1"}},
      {"index too big for job",
       WorkersWithTask(R"({"type": "worker", "index": 2})"),
       {"task.index: 2 is out of range", "0..1"}},
      {"index float",
       WorkersWithTask(R"({"type": "worker", "index": 1.5})"),
       {"task.index: must be an integer, got floating-point number 1.5"}},
      {"index float integral",
       WorkersWithTask(R"({"type": "worker", "index": 1.0})"),
       {"task.index: must be an integer"}},
      {"index bool",
       WorkersWithTask(R"({"type": "worker", "index": true})"),
       {"task.index: must be an integer, got boolean"}},
      {"index word",
       WorkersWithTask(R"({"type": "worker", "index": "one"})"),
       {"task.index: must be a non-negative integer, got string \"one\""}},
      {"index negative string",
       WorkersWithTask(R"({"type": "worker", "index": "-1"})"),
       {"task.index:"}},
      {"index object",
       WorkersWithTask(R"({"type": "worker", "index": {}})"),
       {"task.index: must be an integer, got object"}},
      {"index 2^31",
       WorkersWithTask(R"({"type": "worker", "index": 2147483648})"),
       {"task.index: 2147483648 is out of range"}},
      {"index uint64 max",
       WorkersWithTask(R"({"type": "worker", "index": 18446744073709551615})"),
       {"task.index: 18446744073709551615 is out of range"}},
      {"index int64 min",
       WorkersWithTask(R"({"type": "worker", "index": -9223372036854775808})"),
       {"task.index: must be >= 0"}},
      {"index beyond uint64",
       WorkersWithTask(R"({"type": "worker", "index": 99999999999999999999})"),
       {"task.index: must be an integer, got floating-point number"}},
      {"index huge string",
       WorkersWithTask(R"({"type": "worker", "index": "99999999999999999999"})"),
       {"task.index:"}},
      {"rpc_layer number",
       R"({"rpc_layer": 5})",
       {"TF_CONFIG: rpc_layer: must be a string, got integer"}},
      {"rpc_layer with scheme",
       R"({"rpc_layer": "grpc://"})",
       {"rpc_layer: \"grpc://\" is not a protocol"}},
      {"environment array", R"({"environment": []})", {"TF_CONFIG: environment: must be a string"}},
  };
}

TEST(TFConfigClusterResolverTest, MalformedInputIsInvalidArgumentNamingTheField) {
  for (const MalformedCase& c : MalformedCases()) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>> resolver =
        TFConfigClusterResolver::FromJson(c.json);
    ASSERT_FALSE(resolver.ok());
    EXPECT_EQ(resolver.status().code(), absl::StatusCode::kInvalidArgument) << resolver.status();
    EXPECT_THAT(Message(resolver.status()), HasSubstr("TF_CONFIG"));
    for (const std::string& expected : c.expected) {
      EXPECT_THAT(Message(resolver.status()), HasSubstr(expected));
    }
    EXPECT_LT(resolver.status().message().size(), 1000u) << "messages stay readable";
  }
}

// Every prefix and every single-byte corruption of a valid config must give a resolver or an
// InvalidArgument, never a crash, hang or other code.
TEST(TFConfigClusterResolverTest, TruncatedAndCorruptedConfigsNeverCrash) {
  const std::string valid = kFullConfig;
  int accepted = 0;
  for (size_t n = 0; n <= valid.size(); ++n) {
    auto resolver = TFConfigClusterResolver::FromJson(valid.substr(0, n));
    if (resolver.ok()) {
      ++accepted;
    } else {
      EXPECT_EQ(resolver.status().code(), absl::StatusCode::kInvalidArgument) << n;
    }
  }
  EXPECT_EQ(accepted, 1) << "only the whole text is a complete config";
  for (size_t i = 0; i < valid.size(); ++i) {
    for (char replacement : {'\0', '"', '{', ']', '9', ':', '\\', '\xff'}) {
      std::string corrupted = valid;
      corrupted[i] = replacement;
      auto resolver = TFConfigClusterResolver::FromJson(corrupted);
      if (!resolver.ok()) {
        EXPECT_EQ(resolver.status().code(), absl::StatusCode::kInvalidArgument) << i;
      }
    }
  }
}

}  // namespace
}  // namespace tj
