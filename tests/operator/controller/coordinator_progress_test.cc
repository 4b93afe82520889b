// GrpcCoordinatorProgress reads what a real Coordination service holds under kProgressKey, with
// the job's token; a refused or absent read leaves the last known progress alone.
#include "operator/controller/coordinator_progress.h"

#include <mutex>
#include <vector>

#include "coordinator/base/job_roles.h"
#include "coordinator/base/job_token.h"
#include "coordinator/coordination/coordination_service.h"
#include "coordinator/coordination/coordination_state.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/support/wait_for.h"

namespace tj::op {
namespace {

class CoordinatorProgressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The coordinator's side knows the job's roles and takes the operator's control credential.
    SetJobVerifiersForTesting(DeriveRoleVerifiers("job-secret"));
    service_ = std::make_unique<CoordinationService>(&state_);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    address_ = "127.0.0.1:" + std::to_string(port_);
  }
  void TearDown() override {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    SetJobVerifiersForTesting(std::nullopt);
  }
  void Publish(int64_t step, int64_t checkpoint, std::string state = "training",
               std::string checkpoint_error = "") {
    v1alpha1::TrainingProgress p;
    p.state = std::move(state);
    p.step = step;
    p.last_checkpoint_step = checkpoint;
    p.checkpoint_error = std::move(checkpoint_error);
    ASSERT_TRUE(state_.Set(v1alpha1::kProgressKey, v1alpha1::ToJson(p).dump(), true).ok());
  }

  CoordinationState state_;
  std::unique_ptr<CoordinationService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::string address_;
};

TEST_F(CoordinatorProgressTest, ReadsThePublishedProgress) {
  GrpcCoordinatorProgress progress;
  Publish(120, 100);
  progress.Refresh("ml/digits", address_, "job-secret", nullptr);
  ASSERT_TRUE(testing::WaitFor([&] { return progress.Latest("ml/digits").has_value(); }));
  EXPECT_EQ(progress.Latest("ml/digits")->step, 120);
  EXPECT_EQ(progress.Latest("ml/digits")->last_checkpoint_step, 100);
  Publish(450, 450);
  progress.Refresh("ml/digits", address_, "job-secret", nullptr);
  ASSERT_TRUE(testing::WaitFor([&] { return progress.Latest("ml/digits")->step == 450; }));
  progress.Forget("ml/digits");
  EXPECT_FALSE(progress.Latest("ml/digits").has_value());
}

TEST_F(CoordinatorProgressTest, AWrongTokenOrNothingPublishedLeavesNoProgress) {
  GrpcCoordinatorProgress progress;
  progress.Refresh("ml/empty", address_, "job-secret", nullptr);  // nothing published yet
  ASSERT_TRUE(testing::WaitFor([&] { return progress.reads() == 1; }));
  Publish(7, 0);
  progress.Refresh("ml/other", address_, "not-the-token", nullptr);
  // A third read, for a job with a valid token, orders the wait: reads are served in order.
  progress.Refresh("ml/ok", address_, "job-secret", nullptr);
  ASSERT_TRUE(testing::WaitFor([&] { return progress.Latest("ml/ok").has_value(); }));
  EXPECT_FALSE(progress.Latest("ml/other").has_value());
  EXPECT_FALSE(progress.Latest("ml/empty").has_value());
}

// The listener hears of a job's first progress and of reads that change its state or its failed
// save, not of a step alone: each read publishes another step, and the listener records the step
// it sees, so the calls made are exactly the steps listed, in read order.
TEST_F(CoordinatorProgressTest, TheListenerHearsOfStateAndFailedSavesNotOfAStepAlone) {
  GrpcCoordinatorProgress progress;
  std::mutex mu;
  std::vector<int64_t> heard;
  progress.OnChange([&](const std::string& job) {
    std::lock_guard<std::mutex> lock(mu);
    heard.push_back(job == "ml/digits" ? progress.Latest(job)->step : -1);
  });
  auto heard_so_far = [&] {
    std::lock_guard<std::mutex> lock(mu);
    return heard;
  };
  auto read = [&](int64_t step) {
    progress.Refresh("ml/digits", address_, "job-secret", nullptr);
    return testing::WaitFor([&] {
      const std::optional<v1alpha1::TrainingProgress> latest = progress.Latest("ml/digits");
      return latest.has_value() && latest->step == step;
    });
  };
  Publish(0, -1, "held", "PUT s3://tj-ckpt/jobs/digits/COORDINATOR_GENERATION refused");
  ASSERT_TRUE(read(0)) << "the first progress";
  Publish(120, -1, "training");
  ASSERT_TRUE(read(120)) << "held -> training";
  Publish(150, -1, "training");
  ASSERT_TRUE(read(150)) << "a step alone";
  Publish(300, 150, "training", "PUT s3://tj-ckpt/jobs/digits/ckpt-300/MANIFEST.json refused");
  ASSERT_TRUE(read(300)) << "a failed save";
  Publish(330, 150, "training", "PUT s3://tj-ckpt/jobs/digits/ckpt-300/MANIFEST.json refused");
  ASSERT_TRUE(read(330)) << "the same failure, a step later";
  Publish(450, 450, "training");
  ASSERT_TRUE(read(450)) << "the failure cleared";
  ASSERT_TRUE(testing::WaitFor([&] { return heard_so_far().size() >= 4; }));
  EXPECT_EQ(heard_so_far(), (std::vector<int64_t>{0, 120, 300, 450}));

  // Removed: a changing read calls nobody (the recorded calls stay as they were).
  progress.OnChange(nullptr);
  Publish(500, 450, "restoring");
  ASSERT_TRUE(read(500));
  EXPECT_EQ(heard_so_far().size(), 4u);
}

}  // namespace
}  // namespace tj::op
