// The training loop with the PreemptionCheckpointHandler, in one process (workers and a PS served
// in-process over real gRPC): PS/coordinator notices pause at a step boundary, save and return
// Preempted; the grace period gives two saves; save_fn replaces the save; worker notices and bad
// notices do not stop training; an unwritable checkpoint directory still ends in a defined exit; a
// save its storage refuses is tried again while the notice's deadline allows.
// GoodputLoopTest: where the loop's goodput clock starts counting training as productive.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <filesystem>
#include <limits>
#include <string>
#include <thread>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "api/v1alpha1/goodput.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/checkpoint/checkpoint_storage_error.h"
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
  SleepSteps(ClusterCoordinator& coordinator, int ms, std::string function = "sleep")
      : coordinator_(coordinator), ms_(ms), function_(std::move(function)) {}
  absl::StatusOr<RemoteValue> ScheduleStep(int64_t) override {
    return coordinator_.Schedule(function_, {ms_});
  }
  absl::StatusOr<StepResult> ReadStepResult(const v1::Value&) override {
    ++done;
    return StepResult{1.0, 1};
  }
  std::atomic<int64_t> done{0};

 private:
  ClusterCoordinator& coordinator_;
  int ms_;
  std::string function_;
};

class PreemptionLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinFunctions(registry_).ok());
    auto ps = PsServer::Start("127.0.0.1:0", 0);
    ASSERT_TRUE(ps.ok());
    ps_ = *std::move(ps);
    for (int i = 0; i < 2; ++i) {
      auto worker = WorkerServer::Start("127.0.0.1:0", &registry_,
                                        WorkerIdentity{i, {ps_->address()}});
      ASSERT_TRUE(worker.ok());
      worker_addresses_.push_back("127.0.0.1:" + std::to_string((*worker)->port()));
      workers_.push_back(*std::move(worker));
    }
    StartCoordinator();
  }
  // A coordinator (a new one: a restarted chief) over the workers and the PS, its checkpoints in
  // `checkpoint_dir` (empty: dir_/ckpt).
  void StartCoordinator(const std::string& checkpoint_dir = "") {
    context_.reset();
    CoordinatorOptions options;
    options.health_check_timeout = absl::Seconds(1);
    auto coordinator = ClusterCoordinator::Create(worker_addresses_, options);
    ASSERT_TRUE(coordinator.ok());
    JobSettings settings;
    settings.checkpoint_dir = checkpoint_dir.empty() ? dir_.Join("ckpt") : checkpoint_dir;
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
  std::vector<std::string> worker_addresses_;
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

// Closures ("gated", argument: a phase) that wait on their worker until the test opens their
// phase: the test reads the goodput clock while a step is on a worker and none is back.
class StepGate {
 public:
  absl::StatusOr<v1::Value> Run(const Args& args) {
    TJ_ASSIGN_OR_RETURN(int64_t phase, args.Int(0));
    absl::MutexLock lock(&mu_);
    arrived_ = std::max(arrived_, phase);
    Waiting waiting{this, phase};
    mu_.Await(absl::Condition(&IsOpen, &waiting));
    return v1::Value();
  }
  // Returns once a closure of `phase` runs on a worker.
  void AwaitArrival(int64_t phase) {
    absl::MutexLock lock(&mu_);
    Waiting waiting{this, phase};
    mu_.Await(absl::Condition(&HasArrived, &waiting));
  }
  void Open(int64_t phase) {
    absl::MutexLock lock(&mu_);
    open_ = phase;
  }

 private:
  struct Waiting {
    StepGate* gate;
    int64_t phase;
  };
  // Called by Await with mu_ held.
  static bool IsOpen(Waiting* w) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return w->gate->open_ >= w->phase;
  }
  static bool HasArrived(Waiting* w) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return w->gate->arrived_ >= w->phase;
  }

  absl::Mutex mu_;
  int64_t arrived_ ABSL_GUARDED_BY(mu_) = 0;  // the highest phase with a closure running
  int64_t open_ ABSL_GUARDED_BY(mu_) = 0;     // closures of phases up to this one return
};

using GoodputLoopTest = PreemptionLoopTest;

// Training counts as productive from the first step a run gets back, not from the loop's start:
// until then the job is being brought up (resources on workers, the first closures' warm-up).
// That time is start-up for a fresh run and restart for one that restored a checkpoint.
TEST_F(GoodputLoopTest, TheTimeUntilARunsFirstStepIsBackIsStartupOrRestartNotProductive) {
  StepGate gate;
  ASSERT_TRUE(registry_.Register("gated", [&gate](FunctionContext&, const Args& args) {
    return gate.Run(args);
  }).ok());
  for (const int64_t phase : {1, 2}) {
    // The second run is a restarted coordinator that resumes the first one's final checkpoint.
    const bool restored = phase == 2;
    if (restored) StartCoordinator();
    SleepSteps steps(context_->coordinator(), static_cast<int>(phase), "gated");
    absl::StatusOr<TrainingSummary> summary;
    std::thread loop([&] {
      summary = RunTrainingLoop(*context_, steps, {.total_steps = 20 * phase});
    });
    gate.AwaitArrival(phase);
    const v1alpha1::TimeSplit during = context_->goodput().Read().seconds;
    gate.Open(phase);
    loop.join();
    ASSERT_TRUE(summary.ok()) << summary.status();
    ASSERT_EQ(summary->restored_from_step.has_value(), restored);
    const v1alpha1::LostCause bring_up =
        restored ? v1alpha1::LostCause::kRestart : v1alpha1::LostCause::kStartup;
    EXPECT_EQ(during.productive, 0) << "phase " << phase;
    EXPECT_EQ(during.lost_by(bring_up), during.wall) << "phase " << phase;
    const v1alpha1::TimeSplit after = context_->goodput().Read().seconds;
    EXPECT_GE(after.lost_by(bring_up), during.wall) << "phase " << phase;
    EXPECT_GT(after.productive, 0) << "phase " << phase;
  }
}

// What an S3 store answers when the endpoint sheds load (s3_request.cc marks it so).
absl::Status Refused(int64_t step) {
  return MarkCheckpointStorageError(
      absl::UnavailableError(absl::StrCat("PUT s3://tj-ckpt/jobs/digits/ckpt-", step,
                                          "/MANIFEST.json at http://s3:8333: HTTP 503 SlowDown")),
      "http://s3:8333");
}

// Fast retries: these tests are about which attempts happen, not about their waits.
TrainingLoopOptions LongRun() {
  TrainingLoopOptions options;
  options.total_steps = 100000;
  options.checkpoint_retry.first_backoff = absl::Milliseconds(1);
  options.checkpoint_retry.max_backoff = absl::Milliseconds(20);
  return options;
}

TEST_F(PreemptionLoopTest, ARefusedPreemptionSaveIsTriedAgainBeforeTheDeadlineAndReportedEachTime) {
  int calls = 0;
  TerminationConfig config;
  config.save_fn = [&](int64_t step) { return ++calls <= 2 ? Refused(step) : absl::OkStatus(); };
  auto handler = MakeHandler(config);
  SleepSteps steps(context_->coordinator(), 2);
  std::thread notifier([&] {
    ASSERT_TRUE(testing::WaitFor([&] { return steps.done.load() >= 10; }));
    handler->Notice("ps", 0, "spot interruption", absl::Now() + absl::Minutes(2));
  });
  auto summary = RunTrainingLoop(*context_, steps, LongRun());
  notifier.join();
  EXPECT_TRUE(IsPreempted(summary.status())) << summary.status();
  EXPECT_THAT(std::string(summary.status().message()), HasSubstr("checkpoint saved"));
  EXPECT_EQ(calls, 3) << "refused twice, then saved";
  EXPECT_THAT(context_->metrics().Render(), HasSubstr("tj_checkpoint_failures_total 2"));
  EXPECT_EQ(context_->progress().progress().checkpoint_error, "") << "cleared by the save";
}

TEST_F(PreemptionLoopTest, APreemptionSaveRefusedUntilTheDeadlineEndsPreemptedWithTheAnswer) {
  std::atomic<int> calls{0};
  TerminationConfig config;
  config.save_fn = [&](int64_t step) {
    ++calls;
    return Refused(step);
  };
  auto handler = MakeHandler(config);
  SleepSteps steps(context_->coordinator(), 2);
  std::thread notifier([&] {
    ASSERT_TRUE(testing::WaitFor([&] { return steps.done.load() >= 10; }));
    handler->Notice("ps", 0, "spot interruption", absl::Now() + absl::Seconds(3));
  });
  auto summary = RunTrainingLoop(*context_, steps, LongRun());
  notifier.join();
  EXPECT_TRUE(IsPreempted(summary.status())) << summary.status();
  EXPECT_THAT(std::string(summary.status().message()), HasSubstr("checkpoint failed"));
  EXPECT_GT(calls.load(), 1) << "not tried again within the notice's deadline";
  EXPECT_THAT(context_->metrics().Render(),
              HasSubstr(absl::StrCat("tj_checkpoint_failures_total ", calls.load())));
  const v1alpha1::TrainingProgress progress = context_->progress().progress();
  EXPECT_THAT(progress.checkpoint_error, HasSubstr("HTTP 503 SlowDown"));
  EXPECT_THAT(progress.checkpoint_error, HasSubstr("s3://tj-ckpt/jobs/digits/ckpt-"));
  EXPECT_FALSE(progress.last_checkpoint_step.has_value()) << "a checkpoint never written";
  EXPECT_TRUE(Checkpoints().empty());
}

// A SIGTERM with no grace period gives no deadline (the pod's own is not known here): the save is
// tried final_attempts times; a kill during them leaves no manifest, so nothing half-written.
TEST_F(PreemptionLoopTest, APreemptionSaveWithoutADeadlineIsTriedFinalAttemptsTimes) {
  int calls = 0;
  TerminationConfig config;
  config.save_fn = [&](int64_t step) {
    ++calls;
    return Refused(step);
  };
  auto handler = MakeHandler(config);
  SleepSteps steps(context_->coordinator(), 2);
  std::thread notifier([&] {
    ASSERT_TRUE(testing::WaitFor([&] { return steps.done.load() >= 10; }));
    handler->Notice("chief", 0, "SIGTERM", absl::InfiniteFuture());
  });
  TrainingLoopOptions options = LongRun();
  options.checkpoint_retry.final_attempts = 3;
  auto summary = RunTrainingLoop(*context_, steps, options);
  notifier.join();
  EXPECT_TRUE(IsPreempted(summary.status())) << summary.status();
  EXPECT_THAT(std::string(summary.status().message()), HasSubstr("checkpoint failed"));
  EXPECT_EQ(calls, 3);
  EXPECT_THAT(context_->progress().progress().message, HasSubstr("checkpoint failed"));
}

// The first save of a grace period refused by its storage is reported and training goes on (it
// used to end the coordinator with the storage's error, a permanent failure); the final save
// before the deadline is the one that counts.
TEST_F(PreemptionLoopTest, WithAGracePeriodARefusedFirstSaveDoesNotEndTraining) {
  std::vector<int64_t> saved;
  int calls = 0;
  TerminationConfig config;
  config.grace_period = absl::Seconds(2);
  config.save_fn = [&](int64_t step) {
    if (++calls == 1) return Refused(step);
    saved.push_back(step);
    return absl::OkStatus();
  };
  auto handler = MakeHandler(config);
  SleepSteps steps(context_->coordinator(), 5);
  std::thread notifier([&] {
    ASSERT_TRUE(testing::WaitFor([&] { return steps.done.load() >= 10; }));
    handler->Notice("chief", 0, "SIGTERM", absl::InfiniteFuture());
  });
  auto summary = RunTrainingLoop(*context_, steps, LongRun());
  notifier.join();
  EXPECT_TRUE(IsPreempted(summary.status())) << summary.status();
  EXPECT_THAT(std::string(summary.status().message()), HasSubstr("checkpoint saved"));
  EXPECT_EQ(calls, 2);
  ASSERT_EQ(saved.size(), 1u) << "the final save before the deadline";
  EXPECT_THAT(context_->metrics().Render(), HasSubstr("tj_checkpoint_failures_total 1"));
}

// A checkpoint location whose storage does not answer at start (an S3 endpoint nobody listens on):
// the coordinator is held, reporting each refused attempt, and trains no step; a coordinator
// notice while held ends it, preempted, with nothing to save.
TEST_F(PreemptionLoopTest, HeldWhileTheStorageRefusesTheClaimUntilANoticeEndsIt) {
  // Read when the location is first used, so set for the whole test.
  struct S3Env {
    S3Env() {
      ::setenv("TJ_S3_ENDPOINT", "http://127.0.0.1:1", 1);
      ::setenv("AWS_ACCESS_KEY_ID", "AKIDHELDTEST", 1);
      ::setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
    }
    ~S3Env() {
      ::unsetenv("TJ_S3_ENDPOINT");
      ::unsetenv("AWS_ACCESS_KEY_ID");
      ::unsetenv("AWS_SECRET_ACCESS_KEY");
    }
  } env;
  StartCoordinator("s3://held-bucket/jobs/held");
  auto handler = MakeHandler({});
  SleepSteps steps(context_->coordinator(), 1);
  TrainingLoopOptions options{.total_steps = 100};
  options.checkpoint_retry.start_first_backoff = absl::Milliseconds(10);
  options.checkpoint_retry.start_max_backoff = absl::Milliseconds(40);
  std::thread notifier([&] {
    ASSERT_TRUE(testing::WaitFor([&] {
      const std::string metrics = context_->metrics().Render();
      const std::string line = "\ntj_checkpoint_failures_total ";
      const size_t at = metrics.find(line);
      return at != std::string::npos && std::stoll(metrics.substr(at + line.size())) >= 3;
    }));
    const v1alpha1::TrainingProgress progress = context_->progress().progress();
    EXPECT_EQ(progress.state, "held");
    EXPECT_THAT(progress.checkpoint_error, HasSubstr("s3://held-bucket"));
    EXPECT_THAT(progress.message, HasSubstr("s3://held-bucket/jobs/held"));
    EXPECT_THAT(progress.message, HasSubstr("held without training"));
    handler->Notice("chief", 0, "test", absl::InfiniteFuture());
  });
  auto summary = RunTrainingLoop(*context_, steps, options);
  notifier.join();
  EXPECT_TRUE(IsPreempted(summary.status())) << summary.status();
  EXPECT_THAT(std::string(summary.status().message()), HasSubstr("held"));
  EXPECT_EQ(steps.done.load(), 0) << "trained while held";
}

TEST(CheckpointRetryTest, WaitsDoubleUpToTheCapAndEndAtTheLastAttempt) {
  CheckpointRetryPolicy policy;
  policy.first_backoff = absl::Seconds(1);
  policy.max_backoff = absl::Seconds(5);
  const absl::Time now = absl::FromUnixSeconds(1000);
  const absl::Time never = absl::InfiniteFuture();
  const absl::Duration took = absl::Seconds(1);
  EXPECT_EQ(NextSaveAttemptIn(policy, 1, 5, never, took, now), absl::Seconds(1));
  EXPECT_EQ(NextSaveAttemptIn(policy, 2, 5, never, took, now), absl::Seconds(2));
  EXPECT_EQ(NextSaveAttemptIn(policy, 3, 5, never, took, now), absl::Seconds(4));
  EXPECT_EQ(NextSaveAttemptIn(policy, 4, 5, never, took, now), absl::Seconds(5)) << "capped";
  EXPECT_EQ(NextSaveAttemptIn(policy, 5, 5, never, took, now), std::nullopt);
  EXPECT_EQ(NextSaveAttemptIn(policy, 1, 1, never, took, now), std::nullopt) << "periodic: once";
}

// Held at start while the storage refuses the claim: 1 s doubling to 60 s, never giving up.
TEST(CheckpointRetryTest, StartAttemptsWaitDoublingToTheCapAndNeverEnd) {
  const CheckpointRetryPolicy policy;
  EXPECT_EQ(StartAttemptIn(policy, 1), absl::Seconds(1));
  EXPECT_EQ(StartAttemptIn(policy, 2), absl::Seconds(2));
  EXPECT_EQ(StartAttemptIn(policy, 6), absl::Seconds(32));
  EXPECT_EQ(StartAttemptIn(policy, 7), absl::Seconds(60)) << "capped";
  EXPECT_EQ(StartAttemptIn(policy, 1000000), absl::Seconds(60)) << "no overflow, no end";
}

TEST(CheckpointRetryTest, AnAttemptMustEndBeforeTheDeadline) {
  CheckpointRetryPolicy policy;
  policy.first_backoff = absl::Seconds(4);
  const absl::Time now = absl::FromUnixSeconds(1000);
  const int any = std::numeric_limits<int>::max();
  // 10 s left, attempts of 3 s: the next starts within 7 s; the wait is the backoff.
  EXPECT_EQ(NextSaveAttemptIn(policy, 1, any, now + absl::Seconds(10), absl::Seconds(3), now),
            absl::Seconds(4));
  // 5 s left: shortened so that it still ends in time.
  EXPECT_EQ(NextSaveAttemptIn(policy, 1, any, now + absl::Seconds(5), absl::Seconds(3), now),
            absl::Seconds(2));
  // 2 s left for an attempt of 3 s: none.
  EXPECT_EQ(NextSaveAttemptIn(policy, 1, any, now + absl::Seconds(2), absl::Seconds(3), now),
            std::nullopt);
  // A deadline already passed: none.
  EXPECT_EQ(NextSaveAttemptIn(policy, 1, any, now - absl::Seconds(1), absl::ZeroDuration(), now),
            std::nullopt);
}

}  // namespace
}  // namespace tj::sdk
