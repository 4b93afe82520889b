#include "coordinator/resolver/cluster_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "coordinator/resolver/task_address.h"
#include "nlohmann/json.hpp"

namespace tj {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

ClusterSpec PsWorker() {
  absl::StatusOr<ClusterSpec> spec = ClusterSpec::FromJobs(
      {{"chief", {"c:2222"}}, {"ps", {"p0:1", "p1:1"}}, {"worker", {"w0:1", "w1:1", "w2:1"}}});
  EXPECT_TRUE(spec.ok()) << spec.status();
  return *spec;
}

TEST(ResolverTaskAddressTest, AcceptsHostPortForms) {
  for (const char* address :
       {"h:1", "localhost:65535", "10.0.0.1:2222", "[::1]:2222", "a.b-c.svc:080", "W0:9"}) {
    EXPECT_TRUE(ValidateTaskAddress(address).ok()) << address;
  }
}

TEST(ResolverTaskAddressTest, RejectsMalformedWithReason) {
  struct Case {
    std::string address;
    std::string reason;
  };
  const Case cases[] = {
      {"", "empty"},
      {"h", "no port"},
      {"h:", "empty port"},
      {":80", "empty host"},
      {"h:abc", "non-numeric port"},
      {"h:-1", "non-numeric port"},
      {"h:0", "outside 1-65535"},
      {"h:65536", "outside 1-65535"},
      {"h:99999999999999999999999", "outside 1-65535"},
      {"grpc://h:1", "URL scheme"},
      {"h/x:1", "'/'"},
      {"h :1", "whitespace"},
      {"h:1\n", "whitespace"},
      {std::string("h\0:1", 4), "control"},
      {"h\xc3\xa9:1", "non-ASCII"},
      {"::1:2222", "brackets"},
      {"[::1:2222", "unclosed"},
      {"[::1]", "no port"},
      {"[::1]x:1", "after ']'"},
      {"[]:1", "empty host"},
  };
  for (const Case& c : cases) {
    absl::Status status = ValidateTaskAddress(c.address);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.address;
    EXPECT_THAT(Message(status), HasSubstr(c.reason)) << c.address;
  }
}

TEST(ResolverClusterSpecTest, AccessorsFollowJobsAndIndices) {
  const ClusterSpec spec = PsWorker();
  EXPECT_THAT(spec.jobs(), ElementsAre("chief", "ps", "worker"));
  EXPECT_TRUE(spec.has_job("ps"));
  EXPECT_FALSE(spec.has_job("evaluator"));
  EXPECT_EQ(spec.num_tasks("worker"), 3);
  EXPECT_EQ(spec.num_tasks("evaluator"), 0);
  EXPECT_THAT(spec.task_indices("ps"), ElementsAre(0, 1));
  EXPECT_EQ(*spec.task_address("worker", 2), "w2:1");
  EXPECT_EQ(*spec.task_address("chief", 0), "c:2222");
  EXPECT_TRUE(spec.is_dense("worker"));
  EXPECT_FALSE(spec.empty());
  EXPECT_TRUE(ClusterSpec().empty());
}

TEST(ResolverClusterSpecTest, TaskAddressNotFoundNamesWhatExists) {
  const ClusterSpec spec = PsWorker();
  absl::StatusOr<std::string> missing_job = spec.task_address("evaluator", 0);
  EXPECT_EQ(missing_job.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(missing_job.status()), HasSubstr("\"evaluator\""));
  EXPECT_THAT(Message(missing_job.status()), HasSubstr("chief, ps, worker"));

  absl::StatusOr<std::string> missing_task = spec.task_address("worker", 3);
  EXPECT_EQ(missing_task.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(missing_task.status()), HasSubstr("no task 3"));
  EXPECT_THAT(Message(missing_task.status()), HasSubstr("0..2"));
  EXPECT_EQ(spec.task_address("worker", -1).status().code(), absl::StatusCode::kNotFound);
}

TEST(ResolverClusterSpecTest, JsonRoundTripKeepsListForm) {
  const ClusterSpec spec = PsWorker();
  const nlohmann::json expected = nlohmann::json::parse(
      R"({"chief":["c:2222"],"ps":["p0:1","p1:1"],"worker":["w0:1","w1:1","w2:1"]})");
  EXPECT_EQ(spec.as_json(), expected);
  absl::StatusOr<ClusterSpec> back = ClusterSpec::FromJsonText(spec.ToJsonText());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, spec);
  absl::StatusOr<ClusterSpec> from_value = ClusterSpec::FromJson(expected);
  ASSERT_TRUE(from_value.ok()) << from_value.status();
  EXPECT_EQ(*from_value, spec);
}

TEST(ResolverClusterSpecTest, SparseIndicesRoundTripAsObject) {
  absl::StatusOr<ClusterSpec> spec =
      ClusterSpec::FromJsonText(R"({"ps": ["p:1"], "worker": {"0": "h:1", "2": "h:3"}})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_FALSE(spec->is_dense("worker"));
  EXPECT_EQ(spec->num_tasks("worker"), 2);
  EXPECT_THAT(spec->task_indices("worker"), ElementsAre(0, 2));
  EXPECT_EQ(*spec->task_address("worker", 2), "h:3");
  EXPECT_EQ(spec->task_address("worker", 1).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(spec->as_json()["worker"], nlohmann::json::parse(R"({"0": "h:1", "2": "h:3"})"));
  EXPECT_TRUE(spec->as_json()["ps"].is_array());
  absl::StatusOr<ClusterSpec> back = ClusterSpec::FromJsonText(spec->ToJsonText());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, *spec);
}

TEST(ResolverClusterSpecTest, DenseObjectFormEqualsListForm) {
  absl::StatusOr<ClusterSpec> as_object =
      ClusterSpec::FromJsonText(R"({"worker": {"1": "h:2", "0": "h:1"}})");
  absl::StatusOr<ClusterSpec> as_list = ClusterSpec::FromJsonText(R"({"worker": ["h:1", "h:2"]})");
  ASSERT_TRUE(as_object.ok()) << as_object.status();
  ASSERT_TRUE(as_list.ok()) << as_list.status();
  EXPECT_EQ(*as_object, *as_list);
  EXPECT_TRUE(as_object->as_json()["worker"].is_array());
}

TEST(ResolverClusterSpecTest, EqualityDependsOnOrderAndJobs) {
  auto make = [](std::map<std::string, std::vector<std::string>> jobs) {
    return *ClusterSpec::FromJobs(jobs);
  };
  EXPECT_EQ(make({{"worker", {"a:1", "b:1"}}}), make({{"worker", {"a:1", "b:1"}}}));
  EXPECT_NE(make({{"worker", {"a:1", "b:1"}}}), make({{"worker", {"b:1", "a:1"}}}));
  EXPECT_NE(make({{"worker", {"a:1"}}}), make({{"ps", {"a:1"}}}));
  EXPECT_NE(make({{"worker", {}}}), ClusterSpec());
}

TEST(ResolverClusterSpecTest, EmptyJobIsKept) {
  absl::StatusOr<ClusterSpec> spec = ClusterSpec::FromJsonText(R"({"ps": [], "worker": {}})");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->jobs(), ElementsAre("ps", "worker"));
  EXPECT_EQ(spec->num_tasks("ps"), 0);
  EXPECT_THAT(Message(spec->task_address("ps", 0).status()), HasSubstr("no tasks"));
}

TEST(ResolverClusterSpecTest, AddTaskRejectsConflicts) {
  ClusterSpec spec;
  ASSERT_TRUE(spec.AddTask("worker", 0, "h:1").ok());
  ASSERT_TRUE(spec.AddTask("worker", 5, "h:5").ok());

  absl::Status taken_index = spec.AddTask("worker", 5, "h:6");
  EXPECT_EQ(taken_index.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(taken_index), HasSubstr("/job:worker/task:5 is already defined"));

  absl::Status taken_address = spec.AddTask("ps", 0, "h:1");
  EXPECT_EQ(taken_address.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(taken_address), HasSubstr("/job:ps/task:0"));
  EXPECT_THAT(Message(taken_address), HasSubstr("/job:worker/task:0"));
  EXPECT_FALSE(spec.has_job("ps")) << "a rejected task must not leave its job behind";

  EXPECT_EQ(spec.AddTask("worker", -1, "h:9").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(spec.AddTask("worker", 1, "h").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(spec.AddJob("1st")), HasSubstr("job name \"1st\" is invalid"));
  EXPECT_THAT(Message(spec.AddJob("")), HasSubstr("job name"));
  EXPECT_THAT(Message(spec.AddJob("my-job")), HasSubstr("invalid"));
  EXPECT_TRUE(spec.AddJob("eval_2").ok());
  EXPECT_EQ(spec.num_tasks("worker"), 2);
}

TEST(ResolverClusterSpecTest, FromJobsReportsDuplicateAddressAcrossJobs) {
  absl::StatusOr<ClusterSpec> spec = ClusterSpec::FromJobs({{"ps", {"h:1"}}, {"worker", {"h:1"}}});
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(spec.status()), HasSubstr("/job:ps/task:0"));
  EXPECT_THAT(Message(spec.status()), HasSubstr("/job:worker/task:0"));
}

TEST(ResolverClusterSpecTest, FromJsonTextNamesSourceAndField) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const Case cases[] = {
      {"", "spec: not valid JSON"},
      {"[]", "spec: must be an object mapping job name to tasks, got array"},
      {R"({"worker": "h:1"})", "spec: worker: must be a list"},
      {R"({"worker": [true]})", "spec: worker[0]: must be a \"host:port\" string, got boolean"},
      {R"({"worker": {"x": "h:1"}})", "spec: worker[\"x\"]: task index key"},
      {R"({"worker": {"-1": "h:1"}})", "task index key \"-1\""},
      {R"({"worker": {"99999999999": "h:1"}})", "fits in int"},
      {R"({"worker": {"0": 7}})", "spec: worker[\"0\"]: must be a \"host:port\" string"},
      {R"({"worker": {"0": "h:1", "00": "h:2"}})", "/job:worker/task:0 is already defined"},
      {R"({"bad job": []})", "spec: job name \"bad job\" is invalid"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<ClusterSpec> spec = ClusterSpec::FromJsonText(c.text, "spec");
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(Message(spec.status()), HasSubstr(c.expected)) << c.text;
  }
}

}  // namespace
}  // namespace tj
