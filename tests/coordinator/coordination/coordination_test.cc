// The coordination service: key-value semantics (AlreadyExists, blocking get, delete, list),
// barriers, task registration and states, over real gRPC; a real tj-worker process heartbeating to
// it is reported unavailable once it is killed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/base/channel.h"
#include "coordinator/coordination/coordination_client.h"
#include "coordinator/coordination/coordination_service.h"
#include "coordinator/coordination/coordination_state.h"
#include "nlohmann/json.hpp"
#include "tests/support/wait_for.h"
#include "tjctl/local/process.h"

namespace tj {
namespace {

using ::testing::HasSubstr;

class CoordinationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    ConfigureRuntimeServer(builder);
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    address_ = "127.0.0.1:" + std::to_string(port);
    client_ = std::make_unique<CoordinationClient>(address_);
  }
  void TearDown() override { server_->Shutdown(std::chrono::system_clock::now()); }

  std::vector<v1::PreemptionNoticeRequest> notices_;
  CoordinationState state_{absl::Seconds(2)};
  CoordinationService service_{&state_, [this](const v1::PreemptionNoticeRequest& request) {
                                 notices_.push_back(request);
                                 v1::PreemptionNoticeResponse response;
                                 response.set_accepted(true);
                                 response.set_decision("noted");
                                 return response;
                               }};
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::unique_ptr<CoordinationClient> client_;
};

TEST_F(CoordinationTest, SetRefusesAnExistingKeyUnlessOverwriting) {
  ASSERT_TRUE(client_->Set("step", "10", false).ok());
  const absl::Status again = client_->Set("step", "11", false);
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(again.message()), HasSubstr("'step'"));
  EXPECT_EQ(*client_->Get("step", absl::ZeroDuration()), "10");
  ASSERT_TRUE(client_->Set("step", "11", true).ok());
  EXPECT_EQ(*client_->Get("step", absl::ZeroDuration()), "11");
}

TEST_F(CoordinationTest, GetBlocksUntilTheKeyIsSetOrTimesOut) {
  absl::StatusOr<std::string> value;
  std::thread getter([&] { value = client_->Get("ready", absl::Seconds(10)); });
  // No condition tells that the getter is waiting on the server; this pause makes the blocking
  // path the likely one. The assertions hold either way.
  absl::SleepFor(absl::Milliseconds(100));
  ASSERT_TRUE(client_->Set("ready", "yes", false).ok());
  getter.join();
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, "yes");
  const absl::StatusOr<std::string> missing = client_->Get("never", absl::Milliseconds(100));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("'never'"));
}

TEST_F(CoordinationTest, DeleteRemovesADirectoryAndListFiltersByPrefix) {
  for (const char* key : {"a/1", "a/2", "ab", "b"}) ASSERT_TRUE(client_->Set(key, key, false).ok());
  auto listed = client_->List("a");
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 3u);
  ASSERT_TRUE(client_->Delete("a").ok());
  auto rest = client_->List("");
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->size(), 2u);
  EXPECT_EQ((*rest)[0].first, "ab");
  EXPECT_EQ((*rest)[1].first, "b");
}

TEST_F(CoordinationTest, BarriersReleaseEveryoneOrFailForEveryone) {
  const std::vector<v1::TaskId> all = {MakeTaskId("worker", 0), MakeTaskId("worker", 1)};
  absl::Status second;
  std::thread other([&] { second = client_->Barrier("b1", all[1], all, absl::Seconds(10)); });
  EXPECT_TRUE(client_->Barrier("b1", all[0], all, absl::Seconds(10)).ok());
  other.join();
  EXPECT_TRUE(second.ok()) << second;

  const absl::Status alone = client_->Barrier("b2", all[0], all, absl::Milliseconds(100));
  EXPECT_EQ(alone.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(alone.message()), HasSubstr("worker:1"));
  // A late participant learns the barrier failed.
  EXPECT_EQ(client_->Barrier("b2", all[1], all, absl::Seconds(1)).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(client_->Barrier("b3", MakeTaskId("ps", 0), all, absl::Seconds(1)).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CoordinationTest, HeartbeatsOfAnOldIncarnationAreRefused) {
  const v1::TaskId task = MakeTaskId("ps", 0);
  EXPECT_EQ(client_->Heartbeat(task, 1).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(client_->RegisterTask(task, 1).ok());
  EXPECT_TRUE(client_->Heartbeat(task, 1).ok());
  ASSERT_TRUE(client_->RegisterTask(task, 2).ok());  // restarted
  EXPECT_EQ(client_->Heartbeat(task, 1).code(), absl::StatusCode::kAborted);
  auto states = client_->TaskStates({task, MakeTaskId("ps", 1)});
  ASSERT_TRUE(states.ok());
  ASSERT_EQ(states->size(), 2u);
  EXPECT_TRUE((*states)[0].healthy());
  EXPECT_FALSE((*states)[1].healthy());
  EXPECT_THAT((*states)[1].error().message(), HasSubstr("never registered"));
}

TEST_F(CoordinationTest, EachNewIncarnationReachesTheRegistrationSinkWithItsAddress) {
  std::vector<std::string> seen;
  absl::Mutex mu;
  service_.set_registration_sink([&](const v1::RegisterTaskRequest& request) {
    absl::MutexLock lock(&mu);
    seen.push_back(absl::StrCat(request.task().type(), ":", request.task().index(), "@",
                                request.address(), "#", request.incarnation()));
  });
  const v1::TaskId worker = MakeTaskId("worker", 3);
  ASSERT_TRUE(client_->RegisterTask(worker, 7, "10.0.0.3:2222").ok());
  ASSERT_TRUE(client_->RegisterTask(worker, 7, "10.0.0.3:2222").ok());  // lost heartbeats, same
  ASSERT_TRUE(client_->RegisterTask(worker, 8, "10.0.0.3:2222").ok());  // restarted
  ASSERT_TRUE(client_->RegisterTask(MakeTaskId("ps", 0), 1).ok());      // no address told
  absl::MutexLock lock(&mu);
  EXPECT_THAT(seen, ::testing::ElementsAre("worker:3@10.0.0.3:2222#7", "worker:3@10.0.0.3:2222#8",
                                           "ps:0@#1"));
}

TEST_F(CoordinationTest, AKilledTaskBecomesUnavailable) {
  const std::string tf_config = nlohmann::json{
      {"cluster",
       {{"chief", {address_}}, {"worker", {"127.0.0.1:" + std::to_string(local::PickFreePort())}}}},
      {"task",
       {{"type", "worker"},
        {"index", 0}}}}.dump();
  auto worker =
      local::ChildProcess::StartAndWaitListening(TJ_WORKER_BINARY, {}, {{"TF_CONFIG", tf_config}});
  ASSERT_TRUE(worker.ok()) << worker.status();
  const v1::TaskId task = MakeTaskId("worker", 0);
  auto healthy = [&] {
    auto states = client_->TaskStates({task});
    return states.ok() && (*states)[0].healthy();
  };
  ASSERT_TRUE(testing::WaitFor(healthy, absl::Seconds(20)))
      << "the worker registers and heartbeats";
  worker->KillAndWait(SIGKILL);
  ASSERT_TRUE(testing::WaitFor([&] { return !healthy(); }, absl::Seconds(20)));
  auto states = client_->TaskStates({task});
  EXPECT_THAT((*states)[0].error().message(), HasSubstr("no heartbeat"));
}

TEST_F(CoordinationTest, PreemptionNoticesReachTheSink) {
  const absl::Time deadline = absl::FromUnixMillis(absl::ToUnixMillis(absl::Now()) + 30'000);
  auto response =
      client_->SendPreemptionNotice(MakeTaskId("ps", 0), "EvictionByEvictionAPI", deadline);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_TRUE(response->accepted());
  ASSERT_EQ(notices_.size(), 1u);
  EXPECT_EQ(notices_[0].task().type(), "ps");
  EXPECT_EQ(notices_[0].reason(), "EvictionByEvictionAPI");
  EXPECT_EQ(notices_[0].deadline_unix_millis(), absl::ToUnixMillis(deadline));
}

}  // namespace
}  // namespace tj
