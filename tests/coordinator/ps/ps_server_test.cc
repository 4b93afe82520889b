#include "coordinator/ps/ps_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "coordinator/ps/ps_client.h"

namespace tj {
namespace {

using ::testing::HasSubstr;

TEST(PsServerTest, PortZeroPicksAFreePortAndAddressNamesIt) {
  auto server = PsServer::Start("127.0.0.1:0", 1);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_GT((*server)->port(), 0);
  EXPECT_EQ((*server)->address(), "127.0.0.1:" + std::to_string((*server)->port()));
}

TEST(PsServerTest, AnAddressAlreadyInUseIsUnavailable) {
  auto first = PsServer::Start("127.0.0.1:0", 0);
  ASSERT_TRUE(first.ok()) << first.status();

  auto second = PsServer::Start((*first)->address(), 1);

  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(second.status().message()), HasSubstr((*first)->address()));
}

TEST(PsServerTest, HealthReportsTaskIncarnationAndVariableCount) {
  auto server = PsServer::Start("127.0.0.1:0", 5);
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = PsClient::Connect((*server)->address(), 5);
  v1::VariableSpec spec;
  spec.set_name("w");
  spec.mutable_initial_value()->set_dtype(v1::DTYPE_FLOAT32);
  spec.mutable_initial_value()->add_shape(0);
  ASSERT_TRUE(client->CreateVariables({spec}).ok());

  auto health = client->Health();

  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->ps_task(), 5);
  EXPECT_EQ(health->incarnation(), (*server)->incarnation());
  EXPECT_NE(health->incarnation(), 0u);
  EXPECT_EQ(health->num_variables(), 1);
}

TEST(PsServerTest, EachServerHasItsOwnIncarnation) {
  auto a = PsServer::Start("127.0.0.1:0", 0);
  auto b = PsServer::Start("127.0.0.1:0", 0);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)->incarnation(), (*b)->incarnation());
}

TEST(PsServerTest, ShutdownDoesNotWaitForIdleClientConnections) {
  auto server = PsServer::Start("127.0.0.1:0", 0);
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = PsClient::Connect((*server)->address(), 0);
  ASSERT_TRUE(client->Health().ok());  // leaves an open, idle connection behind

  const absl::Time start = absl::Now();
  (*server)->Shutdown(absl::Seconds(30));
  (*server)->Wait();

  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(client->Health().status().code(), absl::StatusCode::kUnavailable);
}

TEST(PsServerTest, ShutdownIsIdempotentAndWaitReturns) {
  auto server = PsServer::Start("127.0.0.1:0", 0);
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->Shutdown(absl::Milliseconds(100));
  (*server)->Shutdown();
  (*server)->Wait();
}

}  // namespace
}  // namespace tj
