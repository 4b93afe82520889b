// A push's announced size (kPushBytesHeader) against its body, on the in-process PS: a body longer
// than announced is refused naming the peer and both sizes, an announcement that is not a size is
// refused before the body is read, and a push without one is admitted alone; nothing is applied by
// a refused push, and the window is given back for the next. Then what a client takes as "held
// back" and the largest push the PS's gRPC memory allows.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coordinator/base/values.h"
#include "coordinator/ps/dense_wire.h"
#include "coordinator/ps/ps_channel.h"
#include "coordinator/ps/ps_client.h"
#include "coordinator/ps/ps_server.h"
#include "coordinator/ps/push_held_back.h"
#include "coordinator/ps/push_window.h"
#include "tests/coordinator/ps/ps_test_values.h"
#include "tests/coordinator/ps/raw_push.h"

namespace tj {
namespace {

using ::testing::AllOf;
using ::testing::Each;
using ::testing::HasSubstr;

constexpr int64_t kFloats = 64 * 1024;  // 256 KiB
constexpr int64_t kWindow = 1 << 20;

class PushAnnouncementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PsServiceOptions options;
    options.push_window_bytes = kWindow;
    auto server = PsServer::Start("127.0.0.1:0", 0, options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    client_ = PsClient::Connect(server_->address(), 0);
    ASSERT_TRUE(
        client_->Create(testing::CreateRequest({testing::InitializedVariable("w", {kFloats}, {})}))
            .ok());
    channel_ = MakePsChannel(server_->address());
  }

  // A push of ones to "w" with `announcement` as its kPushBytesHeader (none when nullopt), sent
  // as PsClient sends it but for the header; its size in `body_bytes`.
  grpc::Status RawPush(std::optional<std::string> announcement, int64_t* body_bytes = nullptr) {
    const grpc::ByteBuffer request =
        EncodePushRequest({"w"}, {FloatTensor(std::vector<float>(kFloats, 1.0f), {kFloats})});
    if (body_bytes != nullptr) *body_bytes = static_cast<int64_t>(request.Length());
    return testing::RawPush(channel_, request, announcement);
  }

  std::vector<float> Values() {
    auto values = client_->Pull({"w"});
    EXPECT_TRUE(values.ok()) << values.status();
    return values.ok() ? testing::Floats((*values)[0]) : std::vector<float>{};
  }

  std::unique_ptr<PsServer> server_;
  std::shared_ptr<PsClient> client_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(PushAnnouncementTest, ABodyLongerThanAnnouncedIsRefusedNamingThePeerAndBothSizes) {
  int64_t body = 0;
  const grpc::Status status = RawPush("1000", &body);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              AllOf(HasSubstr("parameter server /job:ps/task:0"), HasSubstr("127.0.0.1:"),
                    HasSubstr("announced 1000 bytes"),
                    HasSubstr("its body is " + std::to_string(body) + " bytes"),
                    HasSubstr("nothing was applied")));
  EXPECT_THAT(Values(), Each(0.0f));
  // The refused push took room for 1000 bytes only, and gave it back: an honest push is admitted
  // and applied.
  EXPECT_LE(server_->push_window().peak_bytes(), 1000);
  ASSERT_TRUE(RawPush(std::to_string(body)).ok());
  EXPECT_THAT(Values(), Each(1.0f));
}

TEST_F(PushAnnouncementTest, AnAnnouncementThatIsNotASizeIsRefusedBeforeTheBodyIsRead) {
  for (const std::string& bad : {std::string("abc"), std::string("-5"), std::string("1e6"),
                                 std::string("99999999999999")}) {
    const grpc::Status status = RawPush(bad);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << bad;
    EXPECT_THAT(status.error_message(),
                AllOf(HasSubstr("127.0.0.1:"), HasSubstr("tj-push-bytes='" + bad + "'"),
                      HasSubstr("nothing was read or applied")));
  }
  EXPECT_EQ(server_->push_window().peak_bytes(), 0) << "a refused push was admitted";
  EXPECT_THAT(Values(), Each(0.0f));
}

TEST_F(PushAnnouncementTest, APushWithoutAnAnnouncementIsAdmittedAloneAndApplied) {
  ASSERT_TRUE(RawPush(std::nullopt).ok());
  EXPECT_THAT(Values(), Each(1.0f));
  // It was counted as the whole window: nothing else could be read beside it.
  EXPECT_EQ(server_->push_window().peak_bytes(), kWindow);
}

TEST_F(PushAnnouncementTest, ABodyOfExactlyTheAnnouncedSizeIsApplied) {
  int64_t body = 0;
  ASSERT_TRUE(RawPush("0", &body).error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(RawPush(std::to_string(body)).ok());
  EXPECT_THAT(Values(), Each(1.0f));
  EXPECT_EQ(server_->push_window().peak_bytes(), body);
}

// A push larger than the PS's gRPC memory leaves beside a full window would be cancelled by gRPC
// each time it is sent: it is refused at once, naming the knobs, and nothing is applied.
TEST(PushGrpcMemoryTest, APushLargerThanTheGrpcMemoryAllowsIsRefusedNamingTheKnobs) {
  PsServiceOptions options;
  options.push_window_bytes = kWindow;
  options.grpc_memory_bytes = kWindow + 128 * 1024;
  auto server = PsServer::Start("127.0.0.1:0", 0, options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = PsClient::Connect((*server)->address(), 0);
  ASSERT_TRUE(
      client->Create(testing::CreateRequest({testing::InitializedVariable("w", {kFloats}, {})}))
          .ok());
  const absl::Status pushed =
      client->Push({"w"}, {FloatTensor(std::vector<float>(kFloats, 1.0f), {kFloats})});
  EXPECT_EQ(pushed.code(), absl::StatusCode::kFailedPrecondition) << pushed;
  EXPECT_THAT(std::string(pushed.message()),
              AllOf(HasSubstr("larger than this PS receives at once (128.0 KiB"),
                    HasSubstr("TJ_PS_GRPC_MEMORY_BYTES"), HasSubstr("max_rpc_bytes")));
  auto values = client->Pull({"w"});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_THAT(testing::Floats((*values)[0]), Each(0.0f));
}

TEST(PushHeldBackTest, TheWindowsTrailerAndGrpcsBuffersFullResetAreHeldBackNothingElse) {
  const std::multimap<grpc::string_ref, grpc::string_ref> none;
  std::multimap<grpc::string_ref, grpc::string_ref> held;
  held.emplace(grpc::string_ref(kPushHeldBackTrailer.data(), kPushHeldBackTrailer.size()), "1");
  const grpc::Status exhausted(grpc::StatusCode::RESOURCE_EXHAUSTED, "push window full");
  EXPECT_TRUE(PushHeldBack(exhausted, held));
  EXPECT_FALSE(PushHeldBack(exhausted, none));
  EXPECT_FALSE(PushHeldBack(grpc::Status(grpc::StatusCode::UNAVAILABLE, "x"), held));
  // What a client sees when the PS's gRPC memory quota reclaims its stream.
  EXPECT_TRUE(PushHeldBack(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                        "Received RST_STREAM with error code 11"),
                           none));
  // A message over a size limit fails again if sent again.
  EXPECT_FALSE(PushHeldBack(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                         "Received message larger than max (5 vs. 4)"),
                            none));
}

}  // namespace
}  // namespace tj
