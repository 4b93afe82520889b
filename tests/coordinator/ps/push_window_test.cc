// What bounds a PS's receive memory and its slow calls: the push window on its own (first come
// first served, a body larger than the window alone, a deadline that ends the wait), pushes held
// back by a small window sent again and applied exactly once, and CreateVariables bound by a stall
// timeout instead of the data path's deadline (a test pace plays a loaded PS).
#include "coordinator/ps/push_window.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "coordinator/base/values.h"
#include "coordinator/ps/ps_client.h"
#include "coordinator/ps/ps_error.h"
#include "coordinator/ps/ps_server.h"
#include "coordinator/ps/sharded_ps_client.h"
#include "tests/coordinator/ps/ps_test_values.h"

namespace tj {
namespace {

using ::testing::Each;
using ::testing::HasSubstr;
using testing::InitializedVariable;

constexpr int64_t kMiB = int64_t{1} << 20;

// Waits (bounded) until `window` has `count` pushes waiting; false if it never does.
bool AwaitWaiting(const PushWindow& window, int count) {
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (window.waiting() < count) {
    if (absl::Now() > give_up) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
  return true;
}

TEST(PushWindowTest, AdmitsWhatFitsAndTheRestInArrivalOrder) {
  PushWindow window(10);
  std::optional<PushWindow::Ticket> first = window.Admit(6, absl::Now() + absl::Seconds(60));
  ASSERT_TRUE(first.has_value());
  // 6 + 6 does not fit: the second waits until its deadline.
  EXPECT_FALSE(window.Admit(6, absl::Now() + absl::Milliseconds(20)).has_value());
  EXPECT_EQ(window.held_back(), 1);
  // A waiter for the whole window, then a 1-byte push that would fit beside the first ticket:
  // the small one waits its turn (first come, first served). The order is forced by the room
  // each needs, not by which thread runs first after a release: the small push fits only once
  // the whole-window ticket goes.
  absl::Notification whole_admitted;
  absl::Notification release_whole;
  std::atomic<bool> small_admitted{false};
  std::thread whole([&] {
    auto ticket = window.Admit(10, absl::Now() + absl::Seconds(60));
    EXPECT_TRUE(ticket.has_value());
    EXPECT_FALSE(small_admitted.load()) << "the later, smaller push went first";
    whole_admitted.Notify();
    release_whole.WaitForNotification();
  });
  ASSERT_TRUE(AwaitWaiting(window, 1));
  std::thread small([&] {
    auto ticket = window.Admit(1, absl::Now() + absl::Seconds(60));
    EXPECT_TRUE(ticket.has_value());
    small_admitted = true;
  });
  // Were the window not first come, first served, the small push would be admitted at once
  // beside the first ticket and never be seen waiting.
  ASSERT_TRUE(AwaitWaiting(window, 2)) << "the 1-byte push did not wait behind the larger one";
  first.reset();
  whole_admitted.WaitForNotification();
  EXPECT_EQ(window.waiting(), 1) << "the 1-byte push stops waiting only when the window has room";
  release_whole.Notify();
  whole.join();
  small.join();
  EXPECT_TRUE(small_admitted.load());
  EXPECT_LE(window.peak_bytes(), 10);
}

TEST(PushWindowTest, ABodyLargerThanTheWindowIsAdmittedAlone) {
  PushWindow window(10);
  auto small = window.Admit(1, absl::Now() + absl::Seconds(60));
  ASSERT_TRUE(small.has_value());
  EXPECT_FALSE(window.Admit(50, absl::Now() + absl::Milliseconds(20)).has_value());
  small.reset();
  EXPECT_TRUE(window.Admit(50, absl::Now() + absl::Seconds(60)).has_value());
  EXPECT_EQ(window.peak_bytes(), 50);
}

// Eight clients (each its own connection, as workers are) push at once to a PS whose window
// holds one push and which holds back at once a push that finds no room: pushes are answered
// "held back" and sent again, none fails, and each is applied exactly once.
TEST(PushWindowTest, PushesHeldBackAreSentAgainAndAppliedExactlyOnce) {
  constexpr int64_t kFloats = 256 * 1024;  // 1 MiB
  PsServiceOptions options;
  options.push_window_bytes = kMiB + 4096;
  options.push_hold = absl::ZeroDuration();
  auto server = PsServer::Start("127.0.0.1:0", 0, options);
  ASSERT_TRUE(server.ok()) << server.status();
  auto creator = PsClient::Connect((*server)->address(), 0);
  ASSERT_TRUE(creator->Create(testing::CreateRequest({InitializedVariable("w", {kFloats}, {})}))
                  .ok());
  constexpr int kClients = 8;
  constexpr int kPushes = 6;
  std::vector<std::thread> threads;
  std::vector<absl::Status> failures(kClients);
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      auto client = PsClient::Connect((*server)->address(), 0);
      for (int i = 0; i < kPushes && failures[static_cast<size_t>(c)].ok(); ++i) {
        failures[static_cast<size_t>(c)] = client->Push(
            {"w"}, {FloatTensor(std::vector<float>(kFloats, static_cast<float>(c + 1)),
                                {kFloats})});
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& status : failures) EXPECT_TRUE(status.ok()) << status;
  EXPECT_GT((*server)->push_window().held_back(), 0)
      << "peak " << (*server)->push_window().peak_bytes();
  EXPECT_LE((*server)->push_window().peak_bytes(), kMiB + 4096);
  auto values = creator->Pull({"w"});
  ASSERT_TRUE(values.ok()) << values.status();
  // 6 pushes of 1 + 2 + ... + 8.
  EXPECT_THAT(testing::Floats((*values)[0]), Each(static_cast<float>(kPushes * 36)));
}

// A PS that creates slowly (paced: each 4 MiB request takes about 2 s) still creates every slice
// although each request outlasts the 1 s RPC deadline: creates are bound by the stall timeout.
TEST(CreateStallTest, ASlowCreateOutlastsTheRpcDeadline) {
  PsServiceOptions paced;
  paced.test_create_bytes_per_second = 2 * kMiB;
  auto server = PsServer::Start("127.0.0.1:0", 0, paced);
  ASSERT_TRUE(server.ok()) << server.status();
  ShardedPsOptions options;
  options.placement.max_slice_bytes = 4 * kMiB;
  options.max_rpc_bytes = 4 * kMiB;
  PsClientOptions client_options;
  client_options.rpc_timeout = absl::Seconds(1);
  client_options.shard_stall_timeout = absl::Seconds(60);
  auto client = ShardedPsClient::Connect(
      {(*server)->address()},
      {InitializedVariable("w", {2 * 1024 * 1024}, testing::ConstantInit(0.5f))}, {}, options,
      client_options);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_EQ((*client)->placement().Find("w")->slices.size(), 2u);
  const absl::Status created = (*client)->CreateVariables();
  ASSERT_TRUE(created.ok()) << created;
  std::vector<v1::Tensor> values;
  ASSERT_TRUE((*client)->PullInto({"w"}, values).ok());
  EXPECT_THAT(testing::Floats(values[0]), Each(0.5f));
}

// One that makes no progress for the stall timeout (here a request would take 12 s) is reported
// as an unreachable PS naming the stall, and the PS stops working on the cancelled request.
TEST(CreateStallTest, ACreateWithoutProgressIsAStalledPs) {
  PsServiceOptions paced;
  paced.test_create_bytes_per_second = kMiB;
  auto server = PsServer::Start("127.0.0.1:0", 0, paced);
  ASSERT_TRUE(server.ok()) << server.status();
  PsClientOptions client_options;
  client_options.shard_stall_timeout = absl::Seconds(1);
  auto client = ShardedPsClient::Connect({(*server)->address()},
                                         {InitializedVariable("w", {3 * 1024 * 1024}, {})}, {},
                                         {}, client_options);
  ASSERT_TRUE(client.ok()) << client.status();
  const absl::Status created = (*client)->CreateVariables();
  EXPECT_THAT(PsTaskOf(created), ::testing::Optional(0)) << created;
  EXPECT_THAT(std::string(created.message()), HasSubstr("CreateVariables stalled"));
}

}  // namespace
}  // namespace tj
