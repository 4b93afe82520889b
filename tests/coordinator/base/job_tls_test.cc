// Optional TLS for the job's channels: certificates generated per job, servers that serve TLS,
// runtime channels that verify the job's CA, and a plaintext client, a client without a
// certificate and one with another job's certificate refused (mutual TLS).
#include "coordinator/base/job_tls.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include "coordinator/ps/ps_client.h"
#include "coordinator/ps/ps_server.h"
#include "tests/support/temp_dir.h"
#include "tj/v1/ps.grpc.pb.h"

namespace tj {
namespace {

class JobTlsTest : public ::testing::Test {
 protected:
  void TearDown() override { SetJobTlsForTesting(std::nullopt); }
  testing::TempDir dir_;
};

TEST_F(JobTlsTest, GeneratedFilesLoadAndTheKeyIsPrivate) {
  ASSERT_TRUE(GenerateJobTls(dir_.path(), {"localhost"}, {"127.0.0.1"}).ok());
  auto tls = LoadJobTls(dir_.path());
  ASSERT_TRUE(tls.ok()) << tls.status();
  EXPECT_THAT(tls->ca_pem, ::testing::HasSubstr("BEGIN CERTIFICATE"));
  EXPECT_THAT(tls->key_pem, ::testing::HasSubstr("PRIVATE KEY"));
  struct stat info {};
  ASSERT_EQ(stat((dir_.path() + "/tls.key").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600);
  auto missing = LoadJobTls(dir_.Join("nowhere"));
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), ::testing::HasSubstr("ca.crt"));
}

TEST_F(JobTlsTest, ServersServeTlsAndOnlyTheJobsChannelsGetThrough) {
  ASSERT_TRUE(GenerateJobTls(dir_.path(), {"localhost"}, {"127.0.0.1"}).ok());
  auto tls = LoadJobTls(dir_.path());
  ASSERT_TRUE(tls.ok());
  SetJobTlsForTesting(*tls);
  auto server = PsServer::Start("127.0.0.1:0", 0);
  ASSERT_TRUE(server.ok()) << server.status();

  auto client = PsClient::Connect((*server)->address(), 0, {absl::Seconds(5)});
  EXPECT_TRUE(client->Health().ok()) << client->Health().status();

  // Plaintext to a TLS server fails.
  PsClient plaintext(grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials()),
                     0, (*server)->address(), {absl::Seconds(2)});
  EXPECT_FALSE(plaintext.Health().ok());

  // A client trusting another CA does not trust this server.
  testing::TempDir other;
  ASSERT_TRUE(GenerateJobTls(other.path(), {"localhost"}, {"127.0.0.1"}).ok());
  auto foreign = LoadJobTls(other.path());
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = foreign->ca_pem;
  PsClient stranger(
      grpc::CreateChannel("ipv4:" + (*server)->address(), grpc::SslCredentials(options)), 0,
      (*server)->address(), {absl::Seconds(2)});
  EXPECT_FALSE(stranger.Health().ok());

  // Mutual TLS: a client that trusts the job's CA but presents no certificate, or one of another
  // job's CA, gets no connection.
  grpc::SslCredentialsOptions anonymous_options;
  anonymous_options.pem_root_certs = tls->ca_pem;
  PsClient anonymous(grpc::CreateChannel("ipv4:" + (*server)->address(),
                                         grpc::SslCredentials(anonymous_options)),
                     0, (*server)->address(), {absl::Seconds(2)});
  EXPECT_EQ(anonymous.Health().status().code(), absl::StatusCode::kUnavailable);
  grpc::SslCredentialsOptions impostor_options = anonymous_options;
  impostor_options.pem_cert_chain = foreign->cert_pem;
  impostor_options.pem_private_key = foreign->key_pem;
  PsClient impostor(grpc::CreateChannel("ipv4:" + (*server)->address(),
                                        grpc::SslCredentials(impostor_options)),
                    0, (*server)->address(), {absl::Seconds(2)});
  EXPECT_EQ(impostor.Health().status().code(), absl::StatusCode::kUnavailable);
  // The same channel settings with the job's own certificate are served.
  grpc::SslCredentialsOptions member_options = anonymous_options;
  member_options.pem_cert_chain = tls->cert_pem;
  member_options.pem_private_key = tls->key_pem;
  PsClient member(grpc::CreateChannel("ipv4:" + (*server)->address(),
                                      grpc::SslCredentials(member_options)),
                  0, (*server)->address(), {absl::Seconds(2)});
  EXPECT_TRUE(member.Health().ok()) << member.Health().status();
  (*server)->Shutdown(absl::ZeroDuration());
}

}  // namespace
}  // namespace tj
