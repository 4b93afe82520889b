// Mutual TLS with real tj-train processes: a job whose processes hold the job's certificates
// (TJ_TLS_DIR) and their role credentials trains; its parameter server, still serving after the
// run, answers a client holding the job's certificate and gives no connection to one without a
// certificate, one with another job's certificate, or a plaintext one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "coordinator/base/job_roles.h"
#include "coordinator/base/job_tls.h"
#include "coordinator/base/job_token.h"
#include "coordinator/ps/ps_client.h"
#include "tests/trainer/test_files.h"
#include "tests/trainer/train/train_cluster.h"

namespace tj::testing {
namespace {

constexpr char kSecret[] = "tls-test-secret";

class TrainTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (train::testing::DigitsCsvPath().empty()) {
      GTEST_SKIP() << "digits.csv.gz absent: apt-get install python3-sklearn";
    }
  }
  void TearDown() override {
    SetJobTokenForTesting(std::nullopt);
    SetJobTlsForTesting(std::nullopt);
  }
};

// A PS client on a channel of its own credentials, as the coordinator would call.
absl::Status Health(const std::string& address, std::shared_ptr<grpc::ChannelCredentials> creds) {
  PsClient client(grpc::CreateChannel("ipv4:" + address, std::move(creds)), 0, address,
                  {absl::Seconds(5)});
  return client.Health().status();
}

TEST_F(TrainTlsTest, AJobTrainsOverMutualTlsAndItsServersRefuseStrangers) {
  TempDir tls_dir;
  ASSERT_TRUE(GenerateJobTls(tls_dir.path(), {"localhost"}, {"127.0.0.1"}).ok());
  TrainCluster cluster(1, 1);
  cluster.UseRoleCredentials(kSecret);
  cluster.env()["TJ_TLS_DIR"] = tls_dir.path();
  cluster.StartServers();
  cluster.StartChief({"--model=softmax", "--data=" + train::testing::DigitsCsvPath(),
                      "--epochs=1", "--batch-size=32", "--learning-rate=0.001",
                      "--log-every-steps=10"});
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  EXPECT_EQ(cluster.Progress()->step, 45) << "the job trains over mutual TLS";

  auto job = LoadJobTls(tls_dir.path());
  ASSERT_TRUE(job.ok()) << job.status();
  SetJobTlsForTesting(*job);
  SetJobTokenForTesting(DeriveRoleCredential(kSecret, JobRole::kCoordinator));
  const std::string ps = cluster.ps_address(0);
  EXPECT_TRUE(PsClient::Connect(ps, 0, {absl::Seconds(5)})->Health().ok())
      << "the job's own certificate is served";

  grpc::SslCredentialsOptions anonymous;
  anonymous.pem_root_certs = job->ca_pem;
  const absl::Status no_certificate = Health(ps, grpc::SslCredentials(anonymous));
  EXPECT_EQ(no_certificate.code(), absl::StatusCode::kUnavailable) << no_certificate;

  TempDir other_dir;
  ASSERT_TRUE(GenerateJobTls(other_dir.path(), {"localhost"}, {"127.0.0.1"}).ok());
  auto other = LoadJobTls(other_dir.path());
  ASSERT_TRUE(other.ok());
  grpc::SslCredentialsOptions foreign = anonymous;  // trusts this job's server...
  foreign.pem_cert_chain = other->cert_pem;         // ...with another job's certificate
  foreign.pem_private_key = other->key_pem;
  const absl::Status other_job = Health(ps, grpc::SslCredentials(foreign));
  EXPECT_EQ(other_job.code(), absl::StatusCode::kUnavailable) << other_job;

  EXPECT_EQ(Health(ps, grpc::InsecureChannelCredentials()).code(),
            absl::StatusCode::kUnavailable);
  // The PS is still up: the refusals were the handshake's, not a dead server.
  EXPECT_TRUE(PsClient::Connect(ps, 0, {absl::Seconds(5)})->Health().ok());
}

}  // namespace
}  // namespace tj::testing
