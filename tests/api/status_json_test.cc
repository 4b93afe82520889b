#include "api/v1alpha1/status_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tj::v1alpha1 {
namespace {

using ::testing::ElementsAre;
using json = nlohmann::json;

TEST(StatusJsonTest, RoundTrip) {
  const json input = json::parse(R"({
    "conditions": [
      {"type": "Created", "status": "True", "reason": "Created", "message": "pods created",
       "lastTransitionTime": "2024-05-01T12:00:00Z"},
      {"type": "Restarting", "status": "False", "reason": "OOMKilled"}
    ],
    "replicaStatuses": {"PS": {"active": 1, "succeeded": 0, "failed": 0, "restarts": 1},
                        "Worker": {"active": 3, "succeeded": 0, "failed": 1, "restarts": 2}},
    "step": 12000, "startTime": "2024-05-01T12:00:00Z", "completionTime": "2024-05-01T13:30:05Z",
    "restartCount": 3, "coordinatorRestarts": 1, "observedGeneration": 2
  })");
  FieldErrors errors;
  TrainingJobStatus status = DecodeTrainingJobStatus(input, "status", errors);
  ASSERT_THAT(errors, ElementsAre());
  ASSERT_EQ(status.conditions.size(), 2u);
  EXPECT_EQ(status.conditions[1].type, ConditionType::kRestarting);
  EXPECT_EQ(status.conditions[1].status, ConditionStatus::kFalse);
  EXPECT_EQ(status.replica_statuses.at(ReplicaType::kWorker).restarts, 2);
  EXPECT_EQ(status.start_time, absl::FromUnixSeconds(1714564800));
  EXPECT_EQ(TrainingJobStatusToJson(status), input);
}

TEST(StatusJsonTest, ReportsBadFieldsWithPaths) {
  const json input = json::parse(R"({
    "conditions": [{"type": "Exploded", "status": "Maybe"}, {"status": "True"}],
    "replicaStatuses": {"Chief": {}, "PS": {"active": -1, "ready": 1}},
    "startTime": "yesterday", "restartCount": "3", "extra": 1
  })");
  FieldErrors errors;
  DecodeTrainingJobStatus(input, "status", errors);
  std::vector<std::string> fields;
  for (const FieldError& e : errors) fields.push_back(e.field);
  EXPECT_THAT(fields,
              ElementsAre("status.conditions[0].type", "status.conditions[0].status",
                          "status.conditions[1].type", "status.replicaStatuses.Chief",
                          "status.replicaStatuses.PS.active", "status.replicaStatuses.PS.ready",
                          "status.startTime", "status.restartCount", "status.extra"));
}

TEST(StatusJsonTest, GoodputRoundTripsAndBadGoodputIsReportedWithPaths) {
  const json input = json::parse(R"({
    "restartCount": 0, "coordinatorRestarts": 1, "goodput": 0.5,
    "goodputSeconds": {"wallSeconds": 150, "productiveSeconds": 75,
      "lostSeconds": {"startup": 10, "restart": 25, "waitingForWorkers": 0, "workerRerun": 0,
                      "checkpointSave": 0, "stepsSinceCheckpoint": 40}},
    "goodputAccount": {
      "previousRuns": {"wallSeconds": 120, "productiveSeconds": 50,
        "lostSeconds": {"startup": 10, "restart": 20, "waitingForWorkers": 0, "workerRerun": 0,
                        "checkpointSave": 0, "stepsSinceCheckpoint": 40}},
      "lastRun": {"run": "b", "startedAtUnixSeconds": 1120, "productiveAtCheckpointSeconds": 0,
        "wallSeconds": 30, "productiveSeconds": 25,
        "lostSeconds": {"startup": 0, "restart": 5, "waitingForWorkers": 0, "workerRerun": 0,
                        "checkpointSave": 0, "stepsSinceCheckpoint": 0}}}
  })");
  FieldErrors errors;
  TrainingJobStatus status = DecodeTrainingJobStatus(input, "status", errors);
  ASSERT_THAT(errors, ElementsAre());
  EXPECT_EQ(status.goodput, 0.5);
  EXPECT_EQ(status.goodput_account->last_run.run, "b");
  EXPECT_EQ(TrainingJobStatusToJson(status), input);

  const json bad = json::parse(R"({"goodput": 1.5, "goodputSeconds": {"wallSeconds": -1},
                                   "goodputAccount": {"lastRun": {"run": 3}}})");
  errors.clear();
  status = DecodeTrainingJobStatus(bad, "status", errors);
  std::vector<std::string> fields;
  for (const FieldError& e : errors) fields.push_back(e.field);
  EXPECT_THAT(fields,
              ElementsAre("status.goodput", "status.goodputSeconds", "status.goodputAccount"));
  EXPECT_EQ(status.goodput, std::nullopt);
}

TEST(StatusJsonTest, KubernetesTimeFormat) {
  EXPECT_EQ(FormatKubernetesTime(absl::FromUnixSeconds(0)), "1970-01-01T00:00:00Z");
}

}  // namespace
}  // namespace tj::v1alpha1
