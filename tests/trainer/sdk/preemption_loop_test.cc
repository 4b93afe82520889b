// The training loop with the PreemptionCheckpointHandler, in one process (workers and a PS served
// in-process over real gRPC): PS/coordinator notices pause at a step boundary, save and return
// Preempted; the grace period gives two saves; save_fn replaces the save; worker notices and bad
// notices do not stop training; an unwritable checkpoint directory still ends in a defined exit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <filesystem>
#include <thread>

#include "coordinator/cluster/cluster_coordinator.h"
#include "coordinator/preemption/preemption_handler.h"
#include "coordinator/ps/ps_server.h"
#include "coordinator/worker/builtin_functions.h"
#include "coordinator/worker/worker_server.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait_for.h"
#include "trainer/sdk/chief_context.h"
#include "trainer/sdk/training_loop.h"

namespace tj::sdk {
namespace {

using ::testing::HasSubstr;

// Steps of `ms` milliseconds that report a loss of 1.
class SleepSteps : public StepProgram {
 public:
  SleepSteps(ClusterCoordinator& coordinator, int ms) : coordinator_(coordinator), ms_(ms) {}
  absl::StatusOr<RemoteValue> ScheduleStep(int64_t) override {
    return coordinator_.Schedule("sleep", {ms_});
  }
  absl::StatusOr<StepResult> ReadStepResult(const v1::Value&) override {
    ++done;
    return StepResult{1.0, 1};
  }
  std::atomic<int64_t> done{0};

 private:
  ClusterCoordinator& coordinator_;
  int ms_;
};

class PreemptionLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinFunctions(registry_).ok());
    auto ps = PsServer::Start("127.0.0.1:0", 0);
    ASSERT_TRUE(ps.ok());
    ps_ = *std::move(ps);
    std::vector<std::string> workers;
    for (int i = 0; i < 2; ++i) {
      auto worker = WorkerServer::Start("127.0.0.1:0", &registry_,
                                        WorkerIdentity{i, {ps_->address()}});
      ASSERT_TRUE(worker.ok());
      workers.push_back("127.0.0.1:" + std::to_string((*worker)->port()));
      workers_.push_back(*std::move(worker));
    }
    CoordinatorOptions options;
    options.health_check_timeout = absl::Seconds(1);
    auto coordinator = ClusterCoordinator::Create(workers, options);
    ASSERT_TRUE(coordinator.ok());
    JobSettings settings;
    settings.checkpoint_dir = dir_.Join("ckpt");
    context_ = std::make_unique<ChiefContext>(
        settings, *std::move(coordinator), std::vector<std::string>{ps_->address()},
        std::vector<std::shared_ptr<PsClient>>{PsClient::Connect(ps_->address(), 0)});
  }
  void TearDown() override {
    context_.reset();
    for (auto& worker : workers_) worker->Shutdown(absl::ZeroDuration());
    ps_->Shutdown(absl::ZeroDuration());
  }

  std::unique_ptr<PreemptionCheckpointHandler> MakeHandler(TerminationConfig config) {
    auto handler = std::make_unique<PreemptionCheckpointHandler>(
        std::move(config), &context_->coordinator(), 2, 1);
    context_->set_preemption(handler.get());
    return handler;
  }

  std::vector<std::string> Checkpoints() {
    std::vector<std::string> out;
    if (!std::filesystem::exists(dir_.Join("ckpt"))) return out;
    for (const auto& entry : std::filesystem::directory_iterator(dir_.Join("ckpt"))) {
      if (std::filesystem::exists(entry.path() / "MANIFEST.json")) {
        out.push_back(entry.path().filename().string());
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  testing::TempDir dir_;
  FunctionRegistry registry_;
  std::unique_ptr<PsServer> ps_;
  std::vector<std::unique_ptr<WorkerServer>> workers_;
  std::unique_ptr<ChiefContext> context_;
};

TEST_F(PreemptionLoopTest, APsNoticeCheckpointsAtTheNextBoundaryAndExitsPreempted) {
  auto handler = MakeHandler({});
  SleepSteps steps(context_->coordinator(), 5);
  std::thread notifier([&] {
    ASSERT_TRUE(testing::WaitFor([&] { return steps.done.load() >= 20; }));
    auto response = handler->Notice("ps", 0, "test", absl::InfiniteFuture());
    EXPECT_TRUE(response.accepted()) << response.decision();
  });
  auto summary = RunTrainingLoop(*context_, steps, {.total_steps = 100000});
  notifier.join();
  ASSERT_FALSE(summary.ok());
  EXPECT_TRUE(IsPreempted(summary.status())) << summary.status();
  const std::vector<std::string> saved = Checkpoints();
  ASSERT_EQ(saved.size(), 1u);
  // The checkpoint is at the step every scheduled step reached: nothing in flight was lost.
  EXPECT_EQ(saved[0], absl::StrCat("ckpt-", absl::Dec(steps.done.load(), absl::kZeroPad12)));
  EXPECT_LT(steps.done.load(), 100000);
  EXPECT_FALSE(handler->attached());
}

TEST_F(PreemptionLoopTest, WithAGracePeriodTwoSavesTheSecondBeforeTheDeadline) {
  std::vector<int64_t> saves;
  TerminationConfig config;
  config.grace_period = absl::Seconds(3);
  config.save_fn = [&](int64_t step) {
    saves.push_back(step);
    return absl::OkStatus();
  };
  auto handler = MakeHandler(config);
  SleepSteps steps(context_->coordinator(), 5);
  absl::Time noticed;
  std::thread notifier([&] {
    ASSERT_TRUE(testing::WaitFor([&] { return steps.done.load() >= 20; }));
    noticed = absl::Now();
    handler->Notice("chief", 0, "SIGTERM", absl::InfiniteFuture());
    // Later notices during the countdown are ignored.
    EXPECT_FALSE(handler->Notice("ps", 0, "second", absl::InfiniteFuture()).accepted());
  });
  auto summary = RunTrainingLoop(*context_, steps, {.total_steps = 100000});
  const absl::Time exited = absl::Now();
  notifier.join();
  EXPECT_TRUE(IsPreempted(summary.status())) << summary.status();
  ASSERT_EQ(saves.size(), 2u) << "one at the notice, one before the deadline";
  EXPECT_LT(saves[0], saves[1]) << "training went on in between";
  EXPECT_LE(exited, noticed + absl::Seconds(3));
  EXPECT_TRUE(Checkpoints().empty()) << "save_fn replaced the default save";
}

TEST_F(PreemptionLoopTest, TheTerminationWatcherIsANoticeForTheCoordinator) {
  std::atomic<SleepSteps*> watched{nullptr};  // read by the handler's watcher thread
  TerminationConfig config;
  config.watch_interval = absl::Milliseconds(5);
  config.termination_watcher = [&] {
    SleepSteps* steps = watched.load();
    return steps != nullptr && steps->done.load() >= 15;
  };
  auto handler = MakeHandler(config);
  SleepSteps steps(context_->coordinator(), 2);
  watched.store(&steps);
  auto summary = RunTrainingLoop(*context_, steps, {.total_steps = 100000});
  EXPECT_TRUE(IsPreempted(summary.status())) << summary.status();
  ASSERT_EQ(Checkpoints().size(), 1u);
  EXPECT_THAT(handler->history().front().event, HasSubstr("termination watcher"));
}

TEST_F(PreemptionLoopTest, ANoticeArrivingWhileTheCheckpointIsWrittenIsIgnored) {
  PreemptionCheckpointHandler* self = nullptr;
  v1::PreemptionNoticeResponse during;
  TerminationConfig config;
  config.save_fn = [&](int64_t) {
    during = self->Notice("ps", 0, "second, during the save", absl::InfiniteFuture());
    return absl::OkStatus();
  };
  auto handler = MakeHandler(config);
  self = handler.get();
  SleepSteps steps(context_->coordinator(), 2);
  std::thread notifier([&] {
    ASSERT_TRUE(testing::WaitFor([&] { return steps.done.load() >= 10; }));
    handler->Notice("chief", 0, "first", absl::InfiniteFuture());
  });
  auto summary = RunTrainingLoop(*context_, steps, {.total_steps = 100000});
  notifier.join();
  EXPECT_TRUE(IsPreempted(summary.status())) << summary.status();
  EXPECT_FALSE(during.accepted());
  EXPECT_THAT(during.decision(), HasSubstr("already handling the notice for chief:0"));
  EXPECT_THAT(handler->history().back().event, HasSubstr("second, during the save"));
}

TEST_F(PreemptionLoopTest, ANoOpSaveFnWritesNoCheckpoint) {
  TerminationConfig config;
  config.save_fn = [](int64_t) { return absl::OkStatus(); };
  auto handler = MakeHandler(config);
  SleepSteps steps(context_->coordinator(), 2);
  std::thread notifier([&] {
    ASSERT_TRUE(testing::WaitFor([&] { return steps.done.load() >= 10; }));
    handler->Notice("chief", 0, "test", absl::InfiniteFuture());
  });
  auto summary = RunTrainingLoop(*context_, steps, {.total_steps = 100000});
  notifier.join();
  EXPECT_TRUE(IsPreempted(summary.status()));
  EXPECT_TRUE(Checkpoints().empty());
}

TEST_F(PreemptionLoopTest, WorkerAndBadNoticesDoNotStopTraining) {
  auto handler = MakeHandler({});
  SleepSteps steps(context_->coordinator(), 2);
  std::thread notifier([&] {
    ASSERT_TRUE(testing::WaitFor([&] { return steps.done.load() >= 10; }));
    auto worker = handler->Notice("worker", 1, "DisruptionTarget", absl::Now() + absl::Seconds(5));
    EXPECT_TRUE(worker.accepted()) << worker.decision();
    auto unknown = handler->Notice("worker", 9, "test", absl::InfiniteFuture());
    EXPECT_FALSE(unknown.accepted());
    EXPECT_THAT(unknown.decision(), HasSubstr("no task worker:9"));
    EXPECT_FALSE(handler->Notice("evaluator", 0, "test", absl::InfiniteFuture()).accepted());
    // A second notice for the same worker, with a deadline already passed: still one preemption.
    EXPECT_TRUE(handler->Notice("worker", 1, "late", absl::Now() - absl::Seconds(5)).accepted());
  });
  auto summary = RunTrainingLoop(*context_, steps, {.total_steps = 300});
  notifier.join();
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->steps, 300);
  EXPECT_EQ(Checkpoints(), std::vector<std::string>{"ckpt-000000000300"}) << "only the final one";
  EXPECT_FALSE(handler->preempting());
}

TEST_F(PreemptionLoopTest, AnUnwritableCheckpointDirectoryStillEndsPreemptedWithNothingValid) {
  auto handler = MakeHandler({});
  SleepSteps steps(context_->coordinator(), 2);
  std::thread notifier([&] {
    ASSERT_TRUE(testing::WaitFor([&] { return steps.done.load() >= 10; }));
    // A file where the checkpoint directory should be: unwritable even for root.
    std::filesystem::remove_all(dir_.Join("ckpt"));
    { std::ofstream(dir_.Join("ckpt")) << "not a directory"; }
    handler->Notice("ps", 0, "test", absl::InfiniteFuture());
  });
  auto summary = RunTrainingLoop(*context_, steps, {.total_steps = 100000});
  notifier.join();
  EXPECT_TRUE(IsPreempted(summary.status())) << summary.status();
  EXPECT_THAT(std::string(summary.status().message()), HasSubstr("checkpoint failed"));
  EXPECT_TRUE(std::filesystem::is_regular_file(dir_.Join("ckpt")));
}

}  // namespace
}  // namespace tj::sdk
