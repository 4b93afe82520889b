// The checkpoint bucket (spec.checkpoint.s3, CheckpointStorageStep) against the real API server and
// a real S3-compatible server (fixture: reconciler_integration_fixture.h).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tests/operator/controller/reconciler_integration_fixture.h"
#include "tests/support/s3_test_server.h"

namespace tj::op::testing {
namespace {

using ::testing::HasSubstr;
using ::tj::testing::FindOrBuildWeed;
using ::tj::testing::kS3TestAccessKey;
using ::tj::testing::kS3TestScopedAccessKey;
using ::tj::testing::kS3TestScopedSecretKey;
using ::tj::testing::kS3TestSecretKey;
using ::tj::testing::S3TestServer;

// spec.checkpoint.s3 (CheckpointStorageStep) against a real S3-compatible server
// (SeaweedFS, tests/support/s3_test_server.h, started once for these cases): the credentials
// Secret read by name and the bucket asked with them before the coordinator and PS pods; a
// missing Secret or key, a missing bucket, refused credentials and a silent endpoint each hold
// the job naming what is wrong; a good one gets pods whose env takes the keys from the Secret.
class CheckpointStorageIntegrationTest : public ReconcilerIntegrationTest {
 protected:
  static void SetUpTestSuite() {
    ReconcilerIntegrationTest::SetUpTestSuite();
    if (!KubeClusterEnvironment::skip_reason().empty() || server_ != nullptr) return;
    absl::StatusOr<std::string> weed = FindOrBuildWeed(&s3_skip_reason_);
    ASSERT_TRUE(weed.ok()) << weed.status();
    if (weed->empty()) return;
    absl::StatusOr<std::unique_ptr<S3TestServer>> server =
        S3TestServer::Start(*weed);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = server->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ReconcilerIntegrationTest::SetUp();
    if (IsSkipped()) return;
    if (server_ == nullptr) GTEST_SKIP() << s3_skip_reason_;
  }

  void CreateJobWithBucket(const std::string& dir, const std::string& endpoint,
                           const std::string& name = "digits") {
    std::string yaml = absl::StrReplaceAll(
        kJobYaml, {{"BACKOFF", "6"}, {"EXTRA_RUN_POLICY", ""}, {"name: digits", "name: " + name}});
    absl::StrAppend(&yaml, "  checkpoint:\n    dir: ", dir, "\n    s3:\n      endpoint: ",
                    endpoint, "\n      credentialsSecret: {name: ckpt-s3}\n");
    auto manifest = v1alpha1::YamlToJson(yaml, "job.yaml");
    ASSERT_TRUE(manifest.ok()) << manifest.status();
    auto created = client_->Create(*kube::Resource("trainingjobs", ns_), *manifest);
    ASSERT_TRUE(created.ok()) << created.status();
  }
  void CreateCredentials(const std::map<std::string, std::string>& values) {
    json data = json::object();
    for (const auto& [key, value] : values) data[key] = absl::Base64Escape(value);
    auto created = client_->Create(*kube::Resource("secrets", ns_),
                                   {{"metadata", {{"name", "ckpt-s3"}}}, {"data", data}});
    ASSERT_TRUE(created.ok()) << created.status();
  }
  void CreateGoodCredentials() {
    CreateCredentials({{"AWS_ACCESS_KEY_ID", kS3TestAccessKey},
                       {"AWS_SECRET_ACCESS_KEY", kS3TestSecretKey}});
  }
  // Held: no pod, Created False with the reason and `text` in its message, one Warning Event
  // with `text`, back within 30 s, and not failed.
  void ExpectHeld(const ReconcileResult& held, const std::string& text) {
    EXPECT_TRUE(Pods().empty()) << "no pod, so no checkpoint half-written";
    const json created = CreatedCondition("digits");
    EXPECT_EQ(created["status"], "False");
    EXPECT_EQ(created["reason"], "CheckpointStorageUnavailable");
    EXPECT_THAT(created.value("message", ""), HasSubstr(text));
    ASSERT_TRUE(held.requeue_after.has_value()) << "Secrets and buckets are not watched";
    EXPECT_LE(*held.requeue_after, absl::Seconds(30));
    EXPECT_TRUE(events_.Has("Warning CheckpointStorageUnavailable: "))
        << ::testing::PrintToString(events_.events());
    EXPECT_TRUE(events_.Has(text)) << ::testing::PrintToString(events_.events());
    EXPECT_NE(State("digits"), "Failed");
  }
  static std::vector<json> EnvNamed(const json& pod, const std::string& name) {
    std::vector<json> out;
    for (const json& var : pod["spec"]["containers"][0].value("env", json::array())) {
      if (var.value("name", "") == name) out.push_back(var);
    }
    return out;
  }

  static S3TestServer* server_;
  static std::string s3_skip_reason_;
};
S3TestServer* CheckpointStorageIntegrationTest::server_ = nullptr;
std::string CheckpointStorageIntegrationTest::s3_skip_reason_;

TEST_F(CheckpointStorageIntegrationTest, AGoodBucketGetsPodsThatTakeTheKeysFromTheSecret) {
  CreateGoodCredentials();
  CreateJobWithBucket("s3://tj-ckpt/digits", server_->endpoint());
  Reconcile();
  const std::map<std::string, json> pods = Pods();
  ASSERT_EQ(pods.size(), 4u) << ::testing::PrintToString(Conditions());
  EXPECT_EQ(CreatedCondition("digits")["status"], "True");
  for (const char* name : {"digits-coordinator-0", "digits-ps-0"}) {
    const json& pod = pods.at(name);
    EXPECT_EQ(EnvNamed(pod, "TJ_CHECKPOINT_DIR").at(0)["value"], "s3://tj-ckpt/digits") << name;
    EXPECT_EQ(EnvNamed(pod, "TJ_S3_ENDPOINT").at(0)["value"], server_->endpoint()) << name;
    EXPECT_EQ(EnvNamed(pod, "TJ_S3_CREDENTIALS_SECRET").at(0)["value"], ns_ + "/ckpt-s3");
    EXPECT_EQ(EnvNamed(pod, "AWS_SECRET_ACCESS_KEY").at(0)["valueFrom"],
              (json{{"secretKeyRef", {{"name", "ckpt-s3"}, {"key", "AWS_SECRET_ACCESS_KEY"}}}}));
    // The values themselves are nowhere in the pod.
    EXPECT_EQ(pod.dump().find(kS3TestSecretKey), std::string::npos) << name;
    EXPECT_EQ(pod.dump().find(kS3TestAccessKey), std::string::npos) << name;
  }
  EXPECT_TRUE(EnvNamed(pods.at("digits-worker-0"), "AWS_ACCESS_KEY_ID").empty());
  EXPECT_FALSE(events_.Has("CheckpointStorageUnavailable"));
}

TEST_F(CheckpointStorageIntegrationTest, AMissingSecretHoldsTheJobUntilItExists) {
  CreateJobWithBucket("s3://tj-ckpt/digits", server_->endpoint());
  ExpectHeld(Reconcile(), "Secret " + ns_ + "/ckpt-s3 (spec.checkpoint.s3.credentialsSecret.name) "
                          "does not exist");
  // Held, not failed, and not a Warning per reconcile.
  const size_t events = events_.events().size();
  Reconcile();
  EXPECT_TRUE(Pods().empty());
  EXPECT_EQ(events_.events().size(), events) << ::testing::PrintToString(events_.events());

  CreateGoodCredentials();
  Reconcile();
  EXPECT_EQ(Pods().size(), 4u);
  EXPECT_EQ(CreatedCondition("digits")["status"], "True");
}

TEST_F(CheckpointStorageIntegrationTest, ASecretWithoutTheKeyIsNamed) {
  CreateCredentials({{"AWS_ACCESS_KEY_ID", kS3TestAccessKey},
                     {"secret-key", kS3TestSecretKey}});
  CreateJobWithBucket("s3://tj-ckpt/digits", server_->endpoint());
  ExpectHeld(Reconcile(), "Secret " + ns_ + "/ckpt-s3 has no key AWS_SECRET_ACCESS_KEY "
                          "(spec.checkpoint.s3.credentialsSecret.secretAccessKeyKey)");
}

TEST_F(CheckpointStorageIntegrationTest, AMissingBucketIsNamed) {
  CreateGoodCredentials();
  CreateJobWithBucket("s3://no-such-bucket/digits", server_->endpoint());
  ExpectHeld(Reconcile(), "bucket no-such-bucket does not exist at " + server_->endpoint());
}

TEST_F(CheckpointStorageIntegrationTest, RefusedCredentialsAreNamedWithTheirSecret) {
  CreateCredentials({{"AWS_ACCESS_KEY_ID", kS3TestAccessKey},
                     {"AWS_SECRET_ACCESS_KEY", "not-the-secret-key"}});
  CreateJobWithBucket("s3://tj-ckpt/digits", server_->endpoint());
  // The access key ID masked (job readers may not read Secrets), the secret key never shown.
  const std::string id(kS3TestAccessKey);
  ExpectHeld(Reconcile(), "credentials from Secret " + ns_ + "/ckpt-s3 (access key ****" +
                              id.substr(id.size() - 4) + ") refused for bucket tj-ckpt");
  EXPECT_FALSE(events_.Has(id)) << ::testing::PrintToString(events_.events());
  EXPECT_THAT(CreatedCondition("digits").dump(), ::testing::Not(HasSubstr(id)));
  EXPECT_FALSE(events_.Has("not-the-secret-key")) << "the secret key is never in a message";
}

// Credentials allowed only under s3://tj-ckpt/team-a/ (nothing on the bucket itself): the probe
// lists the checkpoint prefix, not the bucket, so a job there gets its pods, and one elsewhere in
// the bucket is held naming the refused credentials.
TEST_F(CheckpointStorageIntegrationTest, CredentialsScopedToTheCheckpointPrefixGetPods) {
  CreateCredentials({{"AWS_ACCESS_KEY_ID", kS3TestScopedAccessKey},
                     {"AWS_SECRET_ACCESS_KEY", kS3TestScopedSecretKey}});
  CreateJobWithBucket("s3://tj-ckpt/team-a/digits", server_->endpoint());
  Reconcile();
  EXPECT_EQ(Pods().size(), 4u) << ::testing::PrintToString(Conditions());
  EXPECT_EQ(CreatedCondition("digits")["status"], "True");
  EXPECT_FALSE(events_.Has("CheckpointStorageUnavailable"));
}

TEST_F(CheckpointStorageIntegrationTest, CredentialsScopedToAnotherPrefixHoldTheJob) {
  CreateCredentials({{"AWS_ACCESS_KEY_ID", kS3TestScopedAccessKey},
                     {"AWS_SECRET_ACCESS_KEY", kS3TestScopedSecretKey}});
  CreateJobWithBucket("s3://tj-ckpt/team-b/digits", server_->endpoint());
  ExpectHeld(Reconcile(), "credentials from Secret " + ns_ + "/ckpt-s3");
}

TEST_F(CheckpointStorageIntegrationTest, AnEndpointThatDoesNotAnswerHoldsTheJob) {
  CreateGoodCredentials();
  // A port nothing listens on: the connection is refused at once.
  CreateJobWithBucket("s3://tj-ckpt/digits", "http://127.0.0.1:9");
  ExpectHeld(Reconcile(), "s3://tj-ckpt at http://127.0.0.1:9");
}

}  // namespace
}  // namespace tj::op::testing
