// GrpcPreemptionNotifier against a real Coordination service on 127.0.0.1: the notice arrives with
// its task, reason and deadline, authenticated by the job's own token; a wrong token and an
// unreachable coordinator are reported as outcomes, and neither blocks the caller.
#include "operator/controller/preemption_notifier.h"

#include <condition_variable>
#include <mutex>
#include <vector>

#include "coordinator/base/channel.h"
#include "coordinator/base/job_roles.h"
#include "coordinator/base/job_token.h"
#include "coordinator/coordination/coordination_service.h"
#include "coordinator/coordination/coordination_state.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/operator/controller/notice_outcomes.h"

namespace tj::op {
namespace {

using Outcomes = NoticeOutcomes;

class PreemptionNotifierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The coordinator's side knows the job's roles and takes the operator's control credential.
    SetJobVerifiersForTesting(DeriveRoleVerifiers("job-secret"));
    service_ = std::make_unique<CoordinationService>(
        &state_, [this](const v1::PreemptionNoticeRequest& request) {
          std::lock_guard<std::mutex> lock(mu_);
          received_.push_back(request);
          v1::PreemptionNoticeResponse response;
          response.set_accepted(true);
          response.set_decision("checkpoint at the next step");
          return response;
        });
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    SetJobVerifiersForTesting(std::nullopt);
  }

  PreemptionNotice Notice(const std::string& token) {
    PreemptionNotice notice;
    notice.job = "ml/digits";
    notice.coordinator_address = "127.0.0.1:" + std::to_string(port_);
    notice.token = token;
    notice.task_type = "ps";
    notice.task_index = 1;
    notice.reason = "DisruptionTarget/PreemptionByScheduler";
    notice.deadline = absl::FromUnixMillis(1'900'000'000'000);
    return notice;
  }

  CoordinationState state_;
  std::unique_ptr<CoordinationService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::mutex mu_;
  std::vector<v1::PreemptionNoticeRequest> received_;
};

TEST_F(PreemptionNotifierTest, DeliversTheNoticeWithTheJobsToken) {
  Outcomes outcomes;
  GrpcPreemptionNotifier notifier({.rpc_timeout = absl::Seconds(5),
                                   .max_queued = 16,
                                   .on_outcome = [&](const NoticeOutcome& o) { outcomes.Add(o); }});
  notifier.Send(Notice("job-secret"));
  const std::vector<NoticeOutcome> got = outcomes.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].status.ok()) << got[0].status;
  EXPECT_TRUE(got[0].accepted);
  EXPECT_EQ(got[0].decision, "checkpoint at the next step");
  std::lock_guard<std::mutex> lock(mu_);
  ASSERT_EQ(received_.size(), 1u);
  EXPECT_EQ(received_[0].task().type(), "ps");
  EXPECT_EQ(received_[0].task().index(), 1);
  EXPECT_EQ(received_[0].reason(), "DisruptionTarget/PreemptionByScheduler");
  EXPECT_EQ(received_[0].deadline_unix_millis(), 1'900'000'000'000);
}

TEST_F(PreemptionNotifierTest, AWrongTokenIsRefusedAndReported) {
  Outcomes outcomes;
  GrpcPreemptionNotifier notifier({.rpc_timeout = absl::Seconds(5),
                                   .max_queued = 16,
                                   .on_outcome = [&](const NoticeOutcome& o) { outcomes.Add(o); }});
  notifier.Send(Notice("another-jobs-token"));
  const std::vector<NoticeOutcome> got = outcomes.WaitFor(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status.code(), absl::StatusCode::kUnauthenticated) << got[0].status;
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_TRUE(received_.empty());
}

TEST_F(PreemptionNotifierTest, AnUnreachableCoordinatorCostsOneFailedRpcNeverTheCaller) {
  Outcomes outcomes;
  GrpcPreemptionNotifier notifier({.rpc_timeout = absl::Milliseconds(300),
                                   .max_queued = 1,
                                   .on_outcome = [&](const NoticeOutcome& o) { outcomes.Add(o); }});
  PreemptionNotice dead = Notice("job-secret");
  dead.coordinator_address = "10.255.255.1:2222";  // unroutable: no answer, no refusal
  const absl::Time start = absl::Now();
  notifier.Send(dead);
  notifier.Send(dead);  // queue of 1: this one may be dropped while the first is in flight
  notifier.Send(dead);
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(100)) << "Send never waits for the network";
  const std::vector<NoticeOutcome> got = outcomes.WaitFor(3);
  ASSERT_EQ(got.size(), 3u);
  int failed = 0, dropped = 0;
  for (const NoticeOutcome& o : got) {
    EXPECT_FALSE(o.status.ok());
    if (absl::IsResourceExhausted(o.status)) ++dropped;
    else ++failed;
    if (!absl::IsResourceExhausted(o.status)) {
      EXPECT_NE(o.status.message().find("10.255.255.1:2222"), std::string::npos) << o.status;
    }
  }
  EXPECT_GE(dropped, 1);
  EXPECT_GE(failed, 1);
}

}  // namespace
}  // namespace tj::op
