// JobWrites over fakes: writes run in kind order (Secret, pods, Services, status) with one Event
// naming what was created; a refused create is recorded, reported and cleared by the next batch
// that goes through; a cache awaits the informer for pods but not for the Secret; a first status
// write is observed once the job informer shows the version it produced; an answer that meets the
// last awaited creation brings the job back (the lost wake-up of an admitted Kueue job).
#include "operator/controller/job_writes.h"

#include "tests/operator/controller/reconcile_step_fixture.h"

namespace tj::op::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class JobWritesTest : public StepTest {
 protected:
  void SetUp() override {
    SetJob();
    options_.on_writes_done = [this](const std::string& key, bool failed) {
      done_.push_back(key + (failed ? " failed" : " cleared"));
    };
  }
  Write Named(const std::string& object, WriteKind kind, absl::StatusOr<nlohmann::json> answer) {
    return {object, kind, [this, object, answer] {
              order_.push_back(object);
              return answer;
            }};
  }
  static nlohmann::json Labelled(const std::string& name) {
    return {{"metadata",
             {{"name", name}, {"namespace", "ml"}, {"labels", {{"trainingjob.dev/job-name", "digits"}}}}}};
  }
  InlineWriteExecutor executor_;
  std::vector<std::string> order_;
  std::vector<std::string> done_;
  JobWrites writes_{view_, events_, executor_, counting_, options_};
};

TEST_F(JobWritesTest, WritesRunInKindOrderAndOneEventNamesWhatWasCreated) {
  writes_.Dispatch("ml/digits", job_json_,
                   {Named("status", WriteKind::kStatus, nlohmann::json::object()),
                    Named("services/b", WriteKind::kService, nlohmann::json::object()),
                    Named("pods/b", WriteKind::kPod, nlohmann::json::object()),
                    Named("pods/a", WriteKind::kPod, nlohmann::json::object()),
                    Named("secrets/s", WriteKind::kSecret, nlohmann::json::object())},
                   now_);
  EXPECT_THAT(order_, ElementsAre("secrets/s", "pods/b", "pods/a", "services/b", "status"));
  EXPECT_THAT(events_.events(),
              ElementsAre("Normal Created: created the token secret s, 2 pods (a, b) and 1 "
                          "service (b)"));
  EXPECT_EQ(counting_.Snapshot().pods_created, 2);
  EXPECT_TRUE(writes_.expectations().Satisfied("ml/digits", now_)) << "a live view shows them";
  EXPECT_THAT(done_, IsEmpty()) << "nothing failed, nothing cleared";
}

TEST_F(JobWritesTest, ARefusedCreateIsReportedUntilABatchGoesThrough) {
  writes_.Dispatch("ml/digits", job_json_,
                   {Named("pods/digits-ps-0", WriteKind::kPod,
                          absl::InvalidArgumentError("exceeded quota")),
                    Named("pods/digits-worker-0", WriteKind::kPod, absl::AlreadyExistsError("x"))},
                   now_);
  EXPECT_EQ(writes_.CreateFailure("ml/digits"),
            "creating pod digits-ps-0 failed: exceeded quota");
  EXPECT_THAT(events_.events(),
              ElementsAre("Warning FailedCreate: creating pod digits-ps-0 failed: exceeded "
                          "quota; retrying"))
      << "AlreadyExists is no failure: made by an earlier reconcile";
  EXPECT_THAT(done_, ElementsAre("ml/digits failed"));
  EXPECT_TRUE(writes_.expectations().Satisfied("ml/digits", now_)) << "a failure is observed";

  writes_.Dispatch("ml/digits", job_json_,
                   {Named("pods/digits-ps-0", WriteKind::kPod, nlohmann::json::object())}, now_);
  EXPECT_EQ(writes_.CreateFailure("ml/digits"), "");
  EXPECT_THAT(done_, ElementsAre("ml/digits failed", "ml/digits cleared"));
}

TEST_F(JobWritesTest, ACacheAwaitsTheInformerForPodsButNotForTheSecret) {
  view_.live = false;
  writes_.Dispatch("ml/digits", job_json_,
                   {Named("secrets/digits-job-token", WriteKind::kSecret, nlohmann::json::object()),
                    Named("pods/digits-ps-0", WriteKind::kPod, nlohmann::json::object())},
                   now_);
  EXPECT_THAT(writes_.expectations().Pending("ml/digits"), ElementsAre("pods/digits-ps-0"));
  EXPECT_EQ(writes_.ObjectObserved("pods", Labelled("digits-ps-0")), Observation::kSatisfied);
  EXPECT_TRUE(writes_.expectations().Satisfied("ml/digits", now_));
}

TEST_F(JobWritesTest, AFirstStatusWriteIsObservedWhenTheJobInformerShowsItsVersion) {
  view_.live = false;
  job_json_["metadata"]["resourceVersion"] = "4";
  view_.jobs["ml/digits"] = job_json_;
  writes_.Dispatch("ml/digits", job_json_,
                   {Named("status", WriteKind::kStatus,
                          nlohmann::json{{"metadata", {{"resourceVersion", "5"}}}})},
                   now_);
  EXPECT_THAT(writes_.expectations().Pending("ml/digits"), ElementsAre("status"));
  nlohmann::json seen = job_json_;
  writes_.JobObserved(seen);
  EXPECT_FALSE(writes_.expectations().Satisfied("ml/digits", now_)) << "version 4 is older";
  seen["metadata"]["resourceVersion"] = "5";
  writes_.JobObserved(seen);
  EXPECT_TRUE(writes_.expectations().Satisfied("ml/digits", now_));
}

// The lost wake-up of session 11's Kueue e2e: a held job's only write is its first status write.
// The job informer shows the new version before the write's answer is handled (the watch event
// overtakes the HTTP response), so the job's next reconcile, started by that event, still awaits
// the status and stops at AwaitCreations until the expectations' TTL. The answer then meets the
// expectation, and no informer event follows it: before, nothing brought the job back, and Kueue's
// admission, which came in that window, went unacted on for 5 minutes.
TEST_F(JobWritesTest, AStatusAnswerMeetingTheLastExpectationBringsTheJobBack) {
  view_.live = false;
  job_json_["metadata"]["resourceVersion"] = "4";
  view_.jobs["ml/digits"] = job_json_;
  nlohmann::json written = job_json_;
  written["metadata"]["resourceVersion"] = "5";
  bool settled_in_between = true;
  writes_.Dispatch("ml/digits", job_json_,
                   {{"status", WriteKind::kStatus,
                     [&]() -> absl::StatusOr<nlohmann::json> {
                       // The informer updates its cache, then reports, before the answer.
                       view_.jobs["ml/digits"] = written;
                       writes_.JobObserved(written);
                       settled_in_between = writes_.expectations().Satisfied("ml/digits", now_);
                       return written;
                     }}},
                   now_);
  EXPECT_FALSE(settled_in_between) << "a reconcile then stops at AwaitCreations";
  EXPECT_TRUE(writes_.expectations().Satisfied("ml/digits", now_));
  EXPECT_THAT(done_, ElementsAre("ml/digits cleared")) << "the job is brought back";
}

TEST_F(JobWritesTest, ASecretAnswerMeetingTheLastExpectationBringsTheJobBack) {
  view_.live = false;
  writes_.Dispatch("ml/digits", job_json_,
                   {Named("pods/digits-ps-0", WriteKind::kPod, nlohmann::json::object())}, now_);
  EXPECT_EQ(writes_.ObjectObserved("pods", Labelled("digits-ps-0")), Observation::kSatisfied);
  EXPECT_THAT(done_, IsEmpty()) << "the pod informer's event brings it back itself";
  writes_.Dispatch(
      "ml/digits", job_json_,
      {Named("secrets/digits-job-token", WriteKind::kSecret, nlohmann::json::object())}, now_);
  EXPECT_THAT(done_, ElementsAre("ml/digits cleared"));
}

}  // namespace
}  // namespace tj::op::testing
