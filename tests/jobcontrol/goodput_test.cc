// Goodput accounting as tables: one coordinator run's split (SplitRunTime), a job's account over
// coordinator restarts (MergeRun, JobTotal), and the JSON the progress and the status carry.
#include "jobcontrol/goodput.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace tj {
namespace {

using ::testing::HasSubstr;
using v1alpha1::LostCause;
using v1alpha1::RunGoodput;
using v1alpha1::TimeSplit;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TimeSplit Split(double wall, double productive, std::vector<std::pair<LostCause, double>> lost) {
  TimeSplit split{wall, productive, {}};
  for (auto [cause, seconds] : lost) split.lost_by(cause) = seconds;
  return split;
}

void ExpectWellFormed(const TimeSplit& split, const std::string& name) {
  double sum = split.productive;
  EXPECT_TRUE(std::isfinite(split.productive) && split.productive >= 0) << name;
  for (double lost : split.lost) {
    EXPECT_TRUE(std::isfinite(lost) && lost >= 0) << name;
    sum += lost;
  }
  EXPECT_NEAR(sum, split.wall, 1e-9) << name;
}

struct RunCase {
  std::string name;
  RunClockReading reading;
  TimeSplit want;
};

TEST(SplitRunTimeTest, Table) {
  const std::vector<RunCase> cases = {
      {"never started training: all start-up",
       {.wall = 5},
       Split(5, 0, {{LostCause::kStartup, 5}})},
      {"a job that never started at all", {}, Split(0, 0, {})},
      {"fault-free",
       {.wall = 100, .training_started = 4, .workers = 4},
       Split(100, 96, {{LostCause::kStartup, 4}})},
      {"restored: its start-up is a restart",
       {.wall = 100, .training_started = 10, .workers = 4, .restored = true},
       Split(100, 90, {{LostCause::kRestart, 10}})},
      {"checkpoint saves",
       {.wall = 100, .training_started = 4, .checkpoint_save = 6, .workers = 2},
       Split(100, 90, {{LostCause::kStartup, 4}, {LostCause::kCheckpointSave, 6}})},
      {"one worker of four away 20 s: 5 s lost",
       {.wall = 100, .training_started = 0, .worker_seconds_away = 20, .workers = 4},
       Split(100, 95, {{LostCause::kWaitingForWorkers, 5}})},
      {"a lost worker's unanswered closures had run 2 s",
       {.wall = 100, .training_started = 0, .worker_seconds_rerun = 2, .workers = 2},
       Split(100, 99, {{LostCause::kWorkerRerun, 1}})},
      {"losses beyond the wall are capped: never negative productive",
       {.wall = 10,
        .training_started = 2,
        .checkpoint_save = 5,
        .worker_seconds_away = 400,
        .worker_seconds_rerun = 50,
        .workers = 4},
       Split(10, 0,
             {{LostCause::kStartup, 2},
              {LostCause::kCheckpointSave, 5},
              {LostCause::kWaitingForWorkers, 3}})},
      {"training started after the reading's wall (clock skew)",
       {.wall = 3, .training_started = 4},
       Split(3, 0, {{LostCause::kStartup, 3}})},
      {"NaN and negative readings count as 0",
       {.wall = 10,
        .training_started = kNaN,
        .checkpoint_save = -1,
        .worker_seconds_away = kInf,
        .worker_seconds_rerun = kNaN,
        .workers = -3},
       Split(10, 10, {})},
      {"NaN wall", {.wall = kNaN, .training_started = 1}, Split(0, 0, {})},
      {"no workers configured: worker-seconds count as they are",
       {.wall = 10, .training_started = 0, .worker_seconds_away = 1, .workers = 0},
       Split(10, 9, {{LostCause::kWaitingForWorkers, 1}})},
  };
  for (const RunCase& c : cases) {
    const TimeSplit got = SplitRunTime(c.reading);
    EXPECT_EQ(got, c.want) << c.name;
    ExpectWellFormed(got, c.name);
  }
}

RunGoodput Report(std::string id, double started, TimeSplit seconds, double at_checkpoint = 0) {
  return {std::move(id), started, seconds, at_checkpoint};
}

struct MergeCase {
  std::string name;
  std::vector<RunGoodput> reports;  // merged in order into an empty account
  TimeSplit want_total;
};

TEST(MergeRunTest, Table) {
  const std::vector<MergeCase> cases = {
      {"no report: nothing", {}, Split(0, 0, {})},
      {"a report without a run id is ignored",
       {Report("", 1000, Split(10, 10, {}))},
       Split(0, 0, {})},
      {"one run, reported twice: the newer report replaces the older",
       {Report("a", 1000, Split(10, 8, {{LostCause::kStartup, 2}})),
        Report("a", 1000, Split(20, 18, {{LostCause::kStartup, 2}}))},
       Split(20, 18, {{LostCause::kStartup, 2}})},
      {"a stale read of the same run (less wall) is ignored",
       {Report("a", 1000, Split(20, 18, {{LostCause::kStartup, 2}})),
        Report("a", 1000, Split(10, 8, {{LostCause::kStartup, 2}}))},
       Split(20, 18, {{LostCause::kStartup, 2}})},
      {"a restart: gap, training since the checkpoint and the new start-up are lost",
       // Run a: 0..100 s, training from 2 s, checkpoint when it had 60 productive seconds.
       // Run b starts 10 s after a's last report and restores (its own split says restart).
       {Report("a", 1000, Split(100, 98, {{LostCause::kStartup, 2}}), 60),
        Report("b", 1110, Split(50, 45, {{LostCause::kRestart, 5}}), 0)},
       Split(160, 60 + 45,
             {{LostCause::kStartup, 2},
              {LostCause::kStepsSinceCheckpoint, 38},
              {LostCause::kRestart, 10 + 5}})},
      {"a restart without checkpoints: all earlier training is lost",
       {Report("a", 1000, Split(100, 98, {{LostCause::kStartup, 2}}), 0),
        Report("b", 1100, Split(50, 47, {{LostCause::kStartup, 3}}), 0)},
       Split(150, 47,
             {{LostCause::kStartup, 2},
              {LostCause::kStepsSinceCheckpoint, 98},
              {LostCause::kRestart, 3}})},
      {"a third run: the second's start-up counts as restart too",
       {Report("a", 1000, Split(10, 9, {{LostCause::kStartup, 1}}), 9),
        Report("b", 1010, Split(10, 8, {{LostCause::kStartup, 2}}), 8),
        Report("c", 1020, Split(10, 7, {{LostCause::kStartup, 3}}), 0)},
       Split(30, 9 + 8 + 7, {{LostCause::kStartup, 1}, {LostCause::kRestart, 5}})},
      {"a report from a run older than the last one is ignored",
       {Report("a", 1000, Split(10, 10, {}), 10), Report("b", 1010, Split(10, 10, {}), 10),
        Report("a", 1000, Split(15, 15, {}), 15)},
       Split(20, 20, {})},
      {"overlapping runs (the old one's last report after the new one started): no negative gap",
       {Report("a", 1000, Split(30, 30, {}), 30), Report("b", 1020, Split(10, 10, {}), 0)},
       Split(40, 40, {})},
      {"a checkpoint mark beyond productive time is capped",
       {Report("a", 1000, Split(10, 5, {{LostCause::kStartup, 5}}), 99),
        Report("b", 1010, Split(1, 1, {}), 0)},
       Split(11, 6, {{LostCause::kStartup, 5}})},
  };
  for (const MergeCase& c : cases) {
    v1alpha1::JobGoodput job;
    for (const RunGoodput& report : c.reports) job = MergeRun(job, report);
    const TimeSplit total = JobTotal(job);
    EXPECT_EQ(total, c.want_total) << c.name;
    ExpectWellFormed(total, c.name);
  }
}

TEST(GoodputRatioTest, AbsentBeforeAnyTimeNeverAboveOne) {
  EXPECT_EQ(GoodputRatio(Split(0, 0, {})), std::nullopt);
  EXPECT_EQ(GoodputRatio(Split(kNaN, 0, {})), std::nullopt);
  EXPECT_DOUBLE_EQ(*GoodputRatio(Split(100, 93, {})), 0.93);
  EXPECT_DOUBLE_EQ(*GoodputRatio(Split(10, 20, {})), 1.0);
  EXPECT_DOUBLE_EQ(*GoodputRatio(Split(10, kNaN, {})), 0.0);
}

TEST(GoodputJsonTest, RoundTripsAndNamesBadFields) {
  v1alpha1::JobGoodput job;
  job = MergeRun(job, Report("a", 1000, Split(100, 98, {{LostCause::kStartup, 2}}), 60));
  job = MergeRun(job, Report("b", 1110, Split(50, 45, {{LostCause::kRestart, 5}}), 10));
  auto back = v1alpha1::JobGoodputFromJson(v1alpha1::ToJson(job), "status.goodputAccount");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, job);

  // Written by a coordinator that knows a cause this one does not; fields absent read as 0.
  auto newer = v1alpha1::RunGoodputFromJson(
      nlohmann::json::parse(R"({"run":"x","wallSeconds":3,"lostSeconds":{"future":1}})"),
      "goodput");
  ASSERT_TRUE(newer.ok()) << newer.status();
  EXPECT_EQ(newer->seconds, Split(3, 0, {}));

  for (const char* bad :
       {R"({"wallSeconds":-1})", R"({"wallSeconds":"3"})", R"({"lostSeconds":{"restart":-2}})",
        R"({"lostSeconds":[1]})", R"({"run":7})", R"({"productiveAtCheckpointSeconds":-1})"}) {
    auto read = v1alpha1::RunGoodputFromJson(nlohmann::json::parse(bad), "goodput");
    EXPECT_FALSE(read.ok()) << bad;
    EXPECT_THAT(std::string(read.status().message()), HasSubstr("goodput")) << bad;
  }
  EXPECT_FALSE(v1alpha1::JobGoodputFromJson(nlohmann::json::parse("[]"), "status").ok());
}

}  // namespace
}  // namespace tj
