#include "coordinator/ps/ps_client.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "coordinator/base/values.h"
#include "coordinator/ps/ps_channel.h"
#include "coordinator/ps/ps_error.h"
#include "coordinator/ps/ps_server.h"
#include "tests/coordinator/ps/ps_test_values.h"

namespace tj {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using testing::Floats;
using testing::FloatVariable;
using ::testing::HasSubstr;
using ::testing::Optional;

constexpr int kTask = 2;
constexpr auto kShortTimeout = absl::Milliseconds(500);

// A TCP socket on 127.0.0.1 with a kernel-chosen port. Closing it leaves a port nobody listens on;
// listening without ever accepting makes a peer that completes TCP handshakes but never speaks
// HTTP/2.
class LocalSocket {
 public:
  LocalSocket() : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    EXPECT_GE(fd_, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
  }
  ~LocalSocket() { Close(); }
  LocalSocket(const LocalSocket&) = delete;
  LocalSocket& operator=(const LocalSocket&) = delete;

  void Listen() { EXPECT_EQ(listen(fd_, 16), 0); }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_;
  int port_ = 0;
};

class PsClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto server = PsServer::Start("127.0.0.1:0", kTask);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    client_ = PsClient::Connect(server_->address(), kTask);
  }

  std::unique_ptr<PsServer> server_;
  std::unique_ptr<PsClient> client_;
};

TEST_F(PsClientTest, CreatePushPullRoundTrip) {
  ASSERT_TRUE(client_->CreateVariables({FloatVariable("w", {1, 2, 3}, {3})}).ok());

  ASSERT_TRUE(client_->Push({"w"}, {FloatTensor(std::vector<float>{0.5, -2, 10}, {3})}).ok());
  auto values = client_->Pull({"w"});

  ASSERT_TRUE(values.ok()) << values.status();
  ASSERT_EQ(values->size(), 1u);
  EXPECT_THAT(Floats((*values)[0]), ElementsAre(1.5, 0, 13));
  EXPECT_THAT((*values)[0].shape(), ElementsAre(3));
}

TEST_F(PsClientTest, CreateOverRpcIsIdempotentAndRejectsAnotherShape) {
  ASSERT_TRUE(client_->CreateVariables({FloatVariable("w", {1, 2}, {2})}).ok());
  ASSERT_TRUE(client_->Push({"w"}, {FloatTensor(std::vector<float>{1, 1}, {2})}).ok());

  EXPECT_TRUE(client_->CreateVariables({FloatVariable("w", {0, 0}, {2})}).ok());
  const absl::Status other_shape = client_->CreateVariables({FloatVariable("w", {0, 0}, {1, 2})});

  EXPECT_EQ(other_shape.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(other_shape.message()), HasSubstr("'w'"));
  EXPECT_EQ(PsTaskOf(other_shape), std::nullopt);
  auto values = client_->Pull({"w"});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_THAT(Floats((*values)[0]), ElementsAre(2, 3));
}

TEST_F(PsClientTest, ConcurrentPushesFromEightThreadsEndAtEightThousand) {
  ASSERT_TRUE(client_->CreateVariables({FloatVariable("counter", {0}, {1})}).ok());
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([this] {
      for (int i = 0; i < 1000; ++i) {
        const absl::Status status =
            client_->Push({"counter"}, {FloatTensor(std::vector<float>{1}, {1})});
        ASSERT_TRUE(status.ok()) << status;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  auto values = client_->Pull({"counter"});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_THAT(Floats((*values)[0]), ElementsAre(8000));
}

TEST_F(PsClientTest, ApplicationErrorsPassThroughWithoutThePsPayload) {
  ASSERT_TRUE(client_->CreateVariables({FloatVariable("w", {1, 2}, {2})}).ok());
  v1::Tensor short_delta = FloatTensor(std::vector<float>{1, 1}, {2});
  short_delta.mutable_data()->resize(5);
  v1::Tensor int64_delta = FloatTensor(std::vector<float>{1, 1, 1, 1}, {2});
  int64_delta.set_dtype(v1::DTYPE_INT64);

  const absl::Status unknown = client_->Push({"nope"}, {FloatTensor(std::vector<float>{1}, {1})});
  const absl::Status wrong_size = client_->Push({"w"}, {short_delta});
  const absl::Status wrong_dtype = client_->Push({"w"}, {int64_delta});
  const absl::Status unknown_pull = client_->Pull({"w", "nope"}).status();

  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(unknown.message()), HasSubstr("'nope'"));
  EXPECT_EQ(wrong_size.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(wrong_size.message()), AllOf(HasSubstr("'w'"), HasSubstr("5 bytes")));
  EXPECT_EQ(wrong_dtype.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(wrong_dtype.message()), AllOf(HasSubstr("'w'"), HasSubstr("int64")));
  EXPECT_EQ(unknown_pull.code(), absl::StatusCode::kNotFound);
  for (const absl::Status& status : {unknown, wrong_size, wrong_dtype, unknown_pull}) {
    EXPECT_EQ(PsTaskOf(status), std::nullopt) << status;
  }
}

TEST_F(PsClientTest, PushNeedsOneDeltaPerName) {
  const absl::Status status = client_->Push({"a", "b"}, {FloatTensor(std::vector<float>{1}, {1})});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(PsClientTest, AShutDownServerIsUnavailableNamingTaskAndAddress) {
  ASSERT_TRUE(client_->Health().ok());  // the channel is connected before the PS goes away
  const std::string address = server_->address();
  server_->Shutdown(absl::ZeroDuration());
  server_->Wait();

  const absl::Status status = client_->Pull({"w"}).status();

  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(PsTaskOf(status), Optional(kTask));
  EXPECT_THAT(std::string(status.message()),
              AllOf(HasSubstr("parameter server /job:ps/task:2 at " + address + " unavailable")));
}

TEST_F(PsClientTest, ARestartedPsIsFoundAgainOnTheSameChannel) {
  const std::string address = server_->address();
  const uint64_t first_incarnation = server_->incarnation();
  std::shared_ptr<grpc::Channel> channel = MakePsChannel(address);
  PsClient client(channel, kTask, address);
  ASSERT_TRUE(client.Health().ok());
  server_.reset();
  ASSERT_EQ(client.Health().status().code(), absl::StatusCode::kUnavailable);

  auto restarted = PsServer::Start(address, kTask);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  // The reconnect backoff is capped at 1 s (plus jitter); allow generous slack for a loaded
  // machine.
  ASSERT_TRUE(
      channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5)));

  auto health = client.Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_NE(health->incarnation(), first_incarnation);
}

TEST(PsClientUnreachableTest, NobodyListeningIsUnavailableWithinTheDeadline) {
  LocalSocket socket;
  const std::string address = socket.address();
  socket.Close();
  PsClient client(MakePsChannel(address), 4, address, {.rpc_timeout = kShortTimeout});

  const auto start = absl::Now();
  const absl::Status status = client.Push({"w"}, {FloatTensor(std::vector<float>{1}, {1})});
  const absl::Duration elapsed = absl::Now() - start;

  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(PsTaskOf(status), Optional(4));
  EXPECT_THAT(std::string(status.message()), HasSubstr(address));
  EXPECT_LT(elapsed, kShortTimeout + absl::Seconds(1));
}

TEST(PsClientUnreachableTest, APeerThatNeverAnswersTimesOutAsUnavailable) {
  LocalSocket silent;
  silent.Listen();
  PsClient client(MakePsChannel(silent.address()), 1, silent.address(),
                  {.rpc_timeout = kShortTimeout});

  const auto start = absl::Now();
  const absl::Status status = client.Health().status();
  const absl::Duration elapsed = absl::Now() - start;

  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(PsTaskOf(status), Optional(1));
  EXPECT_THAT(std::string(status.message()), HasSubstr("DEADLINE_EXCEEDED"));
  EXPECT_LT(elapsed, kShortTimeout + absl::Seconds(1));
}

}  // namespace
}  // namespace tj
