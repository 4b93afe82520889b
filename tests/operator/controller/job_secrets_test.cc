// JobSecrets: a job's Secret is read by name once and remembered (written answers too), read again
// after its refresh period or once forgotten; absence and errors are not remembered, and an error
// is not taken for absence.
#include "operator/controller/job_secrets.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/operator/controller/recording_kube_client.h"

namespace tj::op {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;

json SecretObject(const std::string& name, const std::string& token) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", {{"name", name}, {"namespace", "ml"}}},
          {"data", {{"token", token}}}};
}

TEST(JobSecretsTest, ReadsByNameOnceThenFromMemoryUntilRefresh) {
  testing::RecordingKubeClient client;
  client.objects["secrets/ml/digits-job-token"] = SecretObject("digits-job-token", "dG9r");
  absl::Time now = absl::FromUnixSeconds(1000);
  JobSecrets secrets(client, absl::Minutes(10));
  secrets.set_clock([&] { return now; });

  for (int i = 0; i < 3; ++i) {
    auto secret = secrets.Get("ml", "digits-job-token");
    ASSERT_TRUE(secret.ok()) << secret.status();
    ASSERT_NE(*secret, nullptr);
    EXPECT_EQ((**secret)["data"]["token"], "dG9r");
  }
  EXPECT_THAT(client.calls, ElementsAre("get secrets digits-job-token"));

  // Edited by hand meanwhile: seen after the refresh period.
  client.objects["secrets/ml/digits-job-token"]["data"]["token"] = "bmV3";
  now += absl::Minutes(10);
  auto secret = secrets.Get("ml", "digits-job-token");
  ASSERT_TRUE(secret.ok());
  EXPECT_EQ((**secret)["data"]["token"], "bmV3");
  EXPECT_EQ(client.calls.size(), 2u);
}

TEST(JobSecretsTest, AbsenceIsNotRememberedAndAWriteIs) {
  testing::RecordingKubeClient client;
  JobSecrets secrets(client);
  auto absent = secrets.Get("ml", "digits-job-token");
  ASSERT_TRUE(absent.ok());
  EXPECT_EQ(*absent, nullptr);
  EXPECT_EQ(secrets.Size(), 0u);
  // The create's answer is remembered: no read follows.
  secrets.Written(SecretObject("digits-job-token", "dG9r"));
  auto written = secrets.Get("ml", "digits-job-token");
  ASSERT_TRUE(written.ok());
  ASSERT_NE(*written, nullptr);
  EXPECT_EQ((**written)["data"]["token"], "dG9r");
  EXPECT_THAT(client.calls, ElementsAre("get secrets digits-job-token"));
  // The job is deleted: forgotten, so memory follows the jobs.
  secrets.Forget("ml", "digits-job-token");
  EXPECT_EQ(secrets.Size(), 0u);
}

TEST(JobSecretsTest, AnErrorIsNotAbsence) {
  testing::RecordingKubeClient client;
  client.fail = absl::UnavailableError("connection refused");
  JobSecrets secrets(client);
  auto secret = secrets.Get("ml", "digits-job-token");
  EXPECT_TRUE(absl::IsUnavailable(secret.status())) << secret.status();
}

}  // namespace
}  // namespace tj::op
