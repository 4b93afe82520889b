// The checkpoint bucket in the pods (checkpoint_storage.h): which pods get the S3 environment, the
// credentials only by secretKeyRef, the Secret's keys read and named when missing; and the
// schema's s3:// rule against the runtime's parser.
#include "operator/controller/checkpoint_storage.h"

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "api/v1alpha1/checkpoint_s3_json.h"
#include "coordinator/checkpoint/s3_location.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "operator/controller/replica_objects.h"
#include "tests/operator/controller/controller_test_jobs.h"

namespace tj::op {
namespace {

using nlohmann::json;
using v1alpha1::ReplicaType;
using ::testing::HasSubstr;

const char kBucket[] = R"(  checkpoint:
    dir: s3://team-ckpt/runs/digits
    s3:
      endpoint: http://seaweedfs.storage.svc:8333
      credentialsSecret: {name: ckpt-s3, secretAccessKeyKey: secret}
)";

// Every entry of `env` named `name` (the operator's must be the only one).
std::vector<json> Named(const json& env, const std::string& name) {
  std::vector<json> out;
  for (const json& var : env) {
    if (var.value("name", "") == name) out.push_back(var);
  }
  return out;
}

json TrainerEnv(const v1alpha1::TrainingJob& job, ReplicaType type) {
  absl::StatusOr<json> pod = BuildReplicaPod(job, {type, 0});
  EXPECT_TRUE(pod.ok()) << pod.status();
  return pod.ok() ? (*pod)["spec"]["containers"][0]["env"] : json::array();
}

TEST(CheckpointStorageTest, CoordinatorAndPsGetTheEndpointAndTheSecretsKeysByReference) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml(kBucket));
  for (ReplicaType type : {ReplicaType::kCoordinator, ReplicaType::kPs}) {
    const json env = TrainerEnv(job, type);
    EXPECT_THAT(Named(env, "TJ_CHECKPOINT_DIR"),
                ::testing::ElementsAre(json{{"name", "TJ_CHECKPOINT_DIR"},
                                            {"value", "s3://team-ckpt/runs/digits"}}));
    EXPECT_THAT(Named(env, "TJ_S3_ENDPOINT"),
                ::testing::ElementsAre(json{{"name", "TJ_S3_ENDPOINT"},
                                            {"value", "http://seaweedfs.storage.svc:8333"}}));
    EXPECT_THAT(Named(env, "TJ_S3_REGION"),
                ::testing::ElementsAre(json{{"name", "TJ_S3_REGION"}, {"value", "us-east-1"}}));
    EXPECT_THAT(Named(env, "TJ_S3_CREDENTIALS_SECRET"),
                ::testing::ElementsAre(
                    json{{"name", "TJ_S3_CREDENTIALS_SECRET"}, {"value", "ml/ckpt-s3"}}));
    EXPECT_THAT(Named(env, "AWS_ACCESS_KEY_ID"),
                ::testing::ElementsAre(json{
                    {"name", "AWS_ACCESS_KEY_ID"},
                    {"valueFrom",
                     {{"secretKeyRef", {{"name", "ckpt-s3"}, {"key", "AWS_ACCESS_KEY_ID"}}}}}}));
    EXPECT_THAT(Named(env, "AWS_SECRET_ACCESS_KEY"),
                ::testing::ElementsAre(
                    json{{"name", "AWS_SECRET_ACCESS_KEY"},
                         {"valueFrom", {{"secretKeyRef", {{"name", "ckpt-s3"}, {"key", "secret"}}}}}}));
  }
  // Workers never write checkpoints: no credentials in their pods.
  const json worker = TrainerEnv(job, ReplicaType::kWorker);
  for (const char* name : {"TJ_S3_ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}) {
    EXPECT_THAT(Named(worker, name), ::testing::IsEmpty()) << name;
  }
  // Nor does the PS's sidecar.
  absl::StatusOr<json> ps = BuildReplicaPod(job, {ReplicaType::kPs, 0});
  ASSERT_TRUE(ps.ok());
  EXPECT_THAT(Named((*ps)["spec"]["containers"][1].value("env", json::array()),
                    "AWS_ACCESS_KEY_ID"),
              ::testing::IsEmpty());
}

TEST(CheckpointStorageTest, TheOperatorsVariablesReplaceTheTemplatesOfTheSameName) {
  std::string yaml = testing::SmallJobYaml(kBucket);
  // The coordinator's template sets its own endpoint and a literal key: both lose.
  const std::string user = R"(- {name: MODEL, value: softmax}
            - {name: TJ_S3_ENDPOINT, value: "http://elsewhere:1"}
            - {name: AWS_SECRET_ACCESS_KEY, value: literal})";
  yaml.replace(yaml.find("- {name: MODEL, value: softmax}"),
               std::string("- {name: MODEL, value: softmax}").size(), user);
  const json env = TrainerEnv(testing::LoadJob(yaml), ReplicaType::kCoordinator);
  ASSERT_EQ(Named(env, "TJ_S3_ENDPOINT").size(), 1u);
  EXPECT_EQ(Named(env, "TJ_S3_ENDPOINT")[0]["value"], "http://seaweedfs.storage.svc:8333");
  ASSERT_EQ(Named(env, "AWS_SECRET_ACCESS_KEY").size(), 1u);
  EXPECT_FALSE(Named(env, "AWS_SECRET_ACCESS_KEY")[0].contains("value"));
  EXPECT_EQ(Named(env, "MODEL").size(), 1u);
}

TEST(CheckpointStorageTest, AJobWithADirectoryGetsNoS3Environment) {
  const v1alpha1::TrainingJob job =
      testing::LoadJob(testing::SmallJobYaml("  checkpoint: {dir: /ckpt}\n"));
  EXPECT_FALSE(UsesCheckpointBucket(job));
  EXPECT_THAT(Named(TrainerEnv(job, ReplicaType::kPs), "TJ_S3_ENDPOINT"), ::testing::IsEmpty());
}

json SecretWith(const std::map<std::string, std::string>& values) {
  json data = json::object();
  for (const auto& [key, value] : values) data[key] = absl::Base64Escape(value);
  return {{"metadata", {{"name", "ckpt-s3"}, {"namespace", "ml"}}}, {"data", data}};
}

TEST(CheckpointStorageTest, CredentialsComeFromTheNamedKeysAndAMissingOrEmptyKeyIsNamed) {
  const v1alpha1::TrainingJob job = testing::LoadJob(testing::SmallJobYaml(kBucket));
  absl::StatusOr<S3Credentials> ok =
      CredentialsFromSecret(job, SecretWith({{"AWS_ACCESS_KEY_ID", "AKID"}, {"secret", "s3cr3t"}}));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->access_key_id, "AKID");
  EXPECT_EQ(ok->secret_access_key, "s3cr3t");

  // The default key name is not read when the job names another.
  absl::StatusOr<S3Credentials> missing = CredentialsFromSecret(
      job, SecretWith({{"AWS_ACCESS_KEY_ID", "AKID"}, {"AWS_SECRET_ACCESS_KEY", "s3cr3t"}}));
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(missing.status()));
  EXPECT_THAT(missing.status().message(),
              HasSubstr("Secret ml/ckpt-s3 has no key secret "
                        "(spec.checkpoint.s3.credentialsSecret.secretAccessKeyKey)"));

  absl::StatusOr<S3Credentials> empty =
      CredentialsFromSecret(job, SecretWith({{"AWS_ACCESS_KEY_ID", ""}, {"secret", "s3cr3t"}}));
  ASSERT_FALSE(empty.ok());
  EXPECT_THAT(empty.status().message(),
              HasSubstr("Secret ml/ckpt-s3 key AWS_ACCESS_KEY_ID is empty"));

  absl::StatusOr<S3Credentials> no_data =
      CredentialsFromSecret(job, json{{"metadata", {{"name", "ckpt-s3"}}}});
  ASSERT_FALSE(no_data.ok());
  EXPECT_THAT(no_data.status().message(), HasSubstr("has no key AWS_ACCESS_KEY_ID"));
}

TEST(CheckpointStorageTest, AccessKeyIdsAreShownByTheirLastFourCharacters) {
  EXPECT_EQ(MaskedAccessKeyId("AKIAIOSFODNN7EXAMPLE"), "****MPLE");
  EXPECT_EQ(MaskedAccessKeyId("short12"), "****");
  EXPECT_EQ(MaskedAccessKeyId(""), "****");
}

TEST(CheckpointStorageTest, OnlyCoordinatorAndPsPodsWaitForTheBucket) {
  JobDecision workers;
  workers.to_create = {{ReplicaType::kWorker, 0}, {ReplicaType::kWorker, 1}};
  EXPECT_FALSE(CreatesCheckpointWriter(workers));
  JobDecision ps = workers;
  ps.to_create.push_back({ReplicaType::kPs, 0});
  EXPECT_TRUE(CreatesCheckpointWriter(ps));
  JobDecision restart;
  restart.restarts.push_back({{ReplicaType::kCoordinator, 0}, RestartDecision{}});
  EXPECT_TRUE(CreatesCheckpointWriter(restart));
}

// The schema's s3:// rule (CRD CEL and tjctl) accepts exactly what the runtime's parser does, so
// a job the API server admits never fails in its pods on the form of its location.
TEST(CheckpointStorageTest, TheSchemasS3RuleAgreesWithTheRuntimesParser) {
  const std::vector<std::string> urls = {
      "s3://bucket",        "s3://bucket/",        "s3://bucket/a/b",   "s3://my.bucket-1/x",
      "s3://b0b/.hidden/x", "s3://abc/..x/y",      "s3://abc/...",      "s3://ab",
      "s3://Bucket/x",      "s3://-bucket/x",      "s3://bucket-/x",    "s3://bucket//x",
      "s3://bucket/./x",    "s3://bucket/../x",    "s3://bucket/x/..",  "s3://bu_cket/x",
      "s3://",              "s3:///x",             "s3://" + std::string(63, 'a') + "/p",
      "s3://" + std::string(64, 'a') + "/p",
  };
  for (const std::string& url : urls) {
    EXPECT_EQ(v1alpha1::IsValidS3CheckpointDir(url), ParseS3Location(url).ok()) << url;
  }
}

}  // namespace
}  // namespace tj::op
