// The job token: servers refuse calls without it or with a wrong one; runtime channels add it.
#include "coordinator/base/job_token.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "coordinator/base/channel.h"
#include "coordinator/ps/ps_client.h"
#include "coordinator/ps/ps_error.h"
#include "coordinator/ps/ps_server.h"
#include "tests/support/temp_dir.h"
#include "tj/v1/ps.grpc.pb.h"

namespace tj {
namespace {

using ::testing::HasSubstr;

class JobTokenTest : public ::testing::Test {
 protected:
  void TearDown() override { SetJobTokenForTesting(std::nullopt); }
};

TEST_F(JobTokenTest, ServersRefuseCallsWithoutTheTokenAndRuntimeChannelsCarryIt) {
  SetJobTokenForTesting("s3cret");
  auto server = PsServer::Start("127.0.0.1:0", 0);
  ASSERT_TRUE(server.ok()) << server.status();

  // A channel of some other process: no token.
  auto stub = v1::ParameterServer::NewStub(
      grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials()));
  v1::PsHealthResponse response;
  {
    grpc::ClientContext context;
    const grpc::Status status = stub->Health(&context, v1::PsHealthRequest(), &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_THAT(status.error_message(), HasSubstr("no job token"));
  }
  {
    grpc::ClientContext context;
    context.AddMetadata(kAuthorizationHeader, "Bearer s3cre7");
    const grpc::Status status = stub->Health(&context, v1::PsHealthRequest(), &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_THAT(status.error_message(), HasSubstr("wrong"));
  }
  // Every call of the job's own clients carries it.
  auto client = PsClient::Connect((*server)->address(), 0);
  EXPECT_TRUE(client->Health().ok());
  EXPECT_TRUE(client->CreateVariables({}).ok());

  // A client whose channel lacks the token is refused, and not as an unreachable PS (which would
  // make the coordinator restart from its checkpoint instead of failing loudly).
  PsClient foreign(grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials()),
                   0, (*server)->address());
  const absl::Status refused = foreign.Health().status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnauthenticated) << refused;
  EXPECT_EQ(PsTaskOf(refused), std::nullopt);
  (*server)->Shutdown(absl::ZeroDuration());
}

TEST_F(JobTokenTest, WithoutATokenEverythingIsOpen) {
  SetJobTokenForTesting(std::nullopt);
  auto server = PsServer::Start("127.0.0.1:0", 0);
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = PsClient::Connect((*server)->address(), 0);
  EXPECT_TRUE(client->Health().ok());
  (*server)->Shutdown(absl::ZeroDuration());
}

TEST_F(JobTokenTest, TheTokenIsReadFromTheFileOrTheVariable) {
  testing::TempDir dir;
  const std::string path = dir.Join("token");
  std::ofstream(path) << "  abc123\n";
  ::setenv(kTokenFileEnv, path.c_str(), 1);
  auto from_file = LoadJobTokenFromEnvironment();
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  EXPECT_EQ(*from_file, "abc123");

  ::setenv(kTokenFileEnv, dir.Join("missing").c_str(), 1);
  auto missing = LoadJobTokenFromEnvironment();
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr(dir.Join("missing")));

  std::ofstream(dir.Join("empty")) << "\n";
  ::setenv(kTokenFileEnv, dir.Join("empty").c_str(), 1);
  EXPECT_THAT(std::string(LoadJobTokenFromEnvironment().status().message()), HasSubstr("empty"));

  ::unsetenv(kTokenFileEnv);
  ::setenv(kTokenEnv, "xyz", 1);
  EXPECT_EQ(*LoadJobTokenFromEnvironment(), "xyz");
  ::unsetenv(kTokenEnv);
  EXPECT_EQ(*LoadJobTokenFromEnvironment(), std::nullopt);
}

TEST_F(JobTokenTest, GeneratedTokensAreLongAndFresh) {
  auto a = GenerateJobToken();
  auto b = GenerateJobToken();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 64u);
  EXPECT_NE(*a, *b);
}

}  // namespace
}  // namespace tj
