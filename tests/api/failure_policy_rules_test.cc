// spec.failurePolicy and replicaSpecs.<T>.restartLimit on JSON manifests: the round trip, and every
// rule that could never match rejected with its field path (the CRD's side is tests/crd/'s
// agreement test, on the files of tests/crd/testdata/invalid/failure-policy-*.yaml).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/v1alpha1/encode.h"
#include "api/v1alpha1/load.h"
#include "api/v1alpha1/status_json.h"

namespace tj::v1alpha1 {
namespace {

using ::testing::ElementsAre;
using json = nlohmann::json;

json JobWithRules(const json& rules) {
  json tmpl = {{"spec", {{"containers", {{{"name", "main"}, {"image", "img"}}}}}}};
  return {{"apiVersion", "trainingjob.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", "job"}}},
          {"spec",
           {{"replicaSpecs",
             {{"Coordinator", {{"template", tmpl}}},
              {"PS", {{"template", tmpl}, {"restartLimit", 2}}},
              {"Worker", {{"replicas", 2}, {"template", tmpl}}}}},
            {"failurePolicy", {{"rules", rules}}}}}};
}

std::vector<std::string> Problems(const json& manifest) {
  std::vector<std::string> out;
  for (const FieldError& e : CheckTrainingJobJson(manifest).errors) {
    out.push_back(e.field + ": " + e.message);
  }
  return out;
}

// The problems of a job with this one rule.
std::vector<std::string> RuleProblems(const json& rule) {
  return Problems(JobWithRules(json::array({rule})));
}

const json kExitCodes = {{"operator", "In"}, {"values", {3, 4}}};

TEST(FailurePolicyRulesTest, EveryKindOfRuleRoundTripsAsEnums) {
  const json rules = {
      {{"action", "Ignore"}, {"onPodConditions", {"DisruptionTarget", "Evicted"}}},
      {{"action", "FailJob"}, {"replicaTypes", {"Worker"}}, {"onExitCodes", kExitCodes}},
      {{"action", "RestartJob"},
       {"replicaTypes", {"PS", "Coordinator"}},
       {"onExitCodes", {{"operator", "NotIn"}, {"values", {0, 42}}}}},
      {{"action", "Count"}, {"onPodConditions", {"OOMKilled"}}},
  };
  const CheckedTrainingJob checked = CheckTrainingJobJson(JobWithRules(rules));
  ASSERT_TRUE(checked.ok()) << FormatFieldErrors("job", checked.errors);
  const FailurePolicy& policy = *checked.job->spec.failure_policy;
  ASSERT_EQ(policy.rules.size(), 4u);
  EXPECT_EQ(policy.rules[0].action, FailurePolicyAction::kIgnore);
  EXPECT_EQ(*policy.rules[0].on_pod_conditions,
            (std::vector<FailureCondition>{FailureCondition::kDisruptionTarget,
                                           FailureCondition::kEvicted}));
  EXPECT_FALSE(policy.rules[0].replica_types.has_value()) << "absent means every type";
  EXPECT_EQ(*policy.rules[1].replica_types, std::vector<ReplicaType>{ReplicaType::kWorker});
  EXPECT_EQ(policy.rules[2].on_exit_codes->op, ExitCodeOperator::kNotIn);
  EXPECT_EQ(policy.rules[2].on_exit_codes->values, (std::vector<int32_t>{0, 42}));
  EXPECT_EQ(checked.job->spec.replica_specs.at(ReplicaType::kPs).restart_limit, 2);
  const json out = TrainingJobToJson(*checked.job);
  EXPECT_EQ(out["spec"]["failurePolicy"]["rules"], rules);
  EXPECT_EQ(out["spec"]["replicaSpecs"]["PS"]["restartLimit"], 2);
}

TEST(FailurePolicyRulesTest, ARuleThatCannotMatchIsRejectedWithItsPath) {
  const std::string rule = "spec.failurePolicy.rules[0]";
  EXPECT_THAT(RuleProblems({{"action", "Ignore"}, {"onPodConditions", {"Preempted"}}}),
              ElementsAre(rule + ".onPodConditions[0]: Unsupported value: \"Preempted\": "
                                 "supported values: \"DisruptionTarget\", \"OOMKilled\", "
                                 "\"Evicted\""));
  EXPECT_THAT(
      RuleProblems(
          {{"action", "Count"}, {"replicaTypes", {"Evaluator"}}, {"onExitCodes", kExitCodes}}),
      ElementsAre(rule + ".replicaTypes[0]: Unsupported value: \"Evaluator\": supported "
                         "values: \"Coordinator\", \"PS\", \"Worker\""));
  EXPECT_THAT(RuleProblems(
                  {{"action", "Count"}, {"onExitCodes", {{"operator", "In"}, {"values", {0, 3}}}}}),
              ElementsAre(rule + ".onExitCodes.values[0]: Invalid value: 0: exit code 0 means "
                                 "success and never matches a failure with operator In (a "
                                 "disrupted replica is matched by onPodConditions)"));
  EXPECT_THAT(RuleProblems({{"action", "Count"},
                            {"onExitCodes", {{"operator", "NotIn"}, {"values", {3, 256}}}}}),
              ElementsAre(rule + ".onExitCodes.values[1]: Invalid value: 256: must be an exit "
                                 "code from 0 to 255"));
  EXPECT_THAT(
      RuleProblems(
          {{"action", "Count"}, {"onExitCodes", kExitCodes}, {"onPodConditions", {"OOMKilled"}}}),
      ElementsAre(rule + ".onPodConditions: Forbidden: may not be set together with "
                         "onExitCodes: a rule matches either exit codes or pod "
                         "conditions"));
  EXPECT_THAT(RuleProblems({{"action", "Count"}}),
              ElementsAre(rule + ".onExitCodes: Required value: or onPodConditions: the failures "
                                 "the rule matches"));
  EXPECT_THAT(RuleProblems({{"onExitCodes", kExitCodes}}),
              ElementsAre(rule + ".action: Required value: Ignore, Count, RestartJob or FailJob"));
  EXPECT_THAT(RuleProblems({{"action", "Retry"}, {"onExitCodes", kExitCodes}}),
              ElementsAre(rule + ".action: Unsupported value: \"Retry\": supported values: "
                                 "\"Ignore\", \"Count\", \"RestartJob\", \"FailJob\""));
  EXPECT_THAT(RuleProblems({{"action", "Count"},
                            {"onExitCodes", {{"operator", "Equals"}, {"values", {3}}}}}),
              ElementsAre(rule + ".onExitCodes.operator: Unsupported value: \"Equals\": "
                                 "supported values: \"In\", \"NotIn\""));
}

TEST(FailurePolicyRulesTest, EmptyAndRepeatedListsAreRejected) {
  const std::string rule = "spec.failurePolicy.rules[0]";
  EXPECT_THAT(RuleProblems({{"action", "Count"}, {"onPodConditions", json::array()}}),
              ElementsAre(rule + ".onPodConditions: Required value: at least one of "
                                 "DisruptionTarget, OOMKilled and Evicted"));
  EXPECT_THAT(
      RuleProblems(
          {{"action", "Count"}, {"replicaTypes", json::array()}, {"onExitCodes", kExitCodes}}),
      ElementsAre(rule + ".replicaTypes: Required value: at least one of Coordinator, PS "
                         "and Worker (leave it out for all three)"));
  EXPECT_THAT(RuleProblems(
                  {{"action", "Count"}, {"onExitCodes", {{"operator", "In"}, {"values", {3, 3}}}}}),
              ElementsAre(rule + ".onExitCodes.values[1]: Duplicate value: 3"));
  EXPECT_THAT(RuleProblems({{"action", "Count"},
                            {"onExitCodes", {{"operator", "In"}, {"values", json::array()}}}}),
              ElementsAre(rule + ".onExitCodes.values: Required value: the exit codes the rule "
                                 "matches (1 to 255)"));
  EXPECT_THAT(RuleProblems({{"action", "Count"}, {"onPodConditions", {"OOMKilled", "OOMKilled"}}}),
              ElementsAre(rule + ".onPodConditions[1]: Duplicate value: \"OOMKilled\""));
}

TEST(FailurePolicyRulesTest, RulesAndRestartLimitsAreBounded) {
  const json rule = {{"action", "Ignore"}, {"onPodConditions", {"DisruptionTarget"}}};
  EXPECT_THAT(Problems(JobWithRules(json(std::vector<json>(21, rule)))),
              ElementsAre("spec.failurePolicy.rules: Too many: 21: must have at most 20 items"));
  json job = JobWithRules(json::array({rule}));
  job["spec"]["replicaSpecs"]["Worker"]["restartLimit"] = -1;
  EXPECT_THAT(Problems(job), ElementsAre("spec.replicaSpecs.Worker.restartLimit: Invalid value: "
                                         "-1: must be greater than or equal to 0"));
}

TEST(FailurePolicyRulesTest, CountedRestartsByTypeAreReadAndWrittenOnlyWhenThereAreSome) {
  FieldErrors errors;
  const TrainingJobStatus old = DecodeTrainingJobStatus(
      {{"replicaStatuses", {{"Worker", {{"active", 2}, {"restarts", 3}}}}}}, "status", errors);
  ASSERT_TRUE(errors.empty());
  EXPECT_EQ(old.replica_statuses.at(ReplicaType::kWorker).counted_restarts, 0)
      << "a status of an operator before restartLimit";
  EXPECT_FALSE(
      TrainingJobStatusToJson(old)["replicaStatuses"]["Worker"].contains("countedRestarts"));
  TrainingJobStatus counted = old;
  counted.replica_statuses[ReplicaType::kWorker].counted_restarts = 2;
  const json out = TrainingJobStatusToJson(counted);
  EXPECT_EQ(out["replicaStatuses"]["Worker"]["countedRestarts"], 2);
  EXPECT_EQ(DecodeTrainingJobStatus(out, "status", errors), counted);
  EXPECT_TRUE(errors.empty());
}

// replicaSpecs.<T>.replacementPolicy: both spellings round trip; anything else is named with its
// path and the supported values; unset stays unset (defaults differ by type, ReplacementPolicyFor).
TEST(ReplacementPolicyFieldTest, RoundTripsAndAnUnknownSpellingIsNamed) {
  json manifest = JobWithRules(json::array({{{"action", "Count"}, {"onPodConditions", {"OOMKilled"}}}}));
  manifest["spec"]["replicaSpecs"]["PS"]["replacementPolicy"] = "Failed";
  manifest["spec"]["replicaSpecs"]["Worker"]["replacementPolicy"] = "TerminatingOrFailed";
  const CheckedTrainingJob checked = CheckTrainingJobJson(manifest);
  ASSERT_TRUE(checked.ok()) << FormatFieldErrors("job", checked.errors);
  const auto& specs = checked.job->spec.replica_specs;
  EXPECT_EQ(specs.at(ReplicaType::kPs).replacement_policy, ReplacementPolicy::kFailed);
  EXPECT_EQ(specs.at(ReplicaType::kWorker).replacement_policy,
            ReplacementPolicy::kTerminatingOrFailed);
  EXPECT_FALSE(specs.at(ReplicaType::kCoordinator).replacement_policy.has_value());
  const json out = TrainingJobToJson(*checked.job);
  EXPECT_EQ(out["spec"]["replicaSpecs"]["PS"]["replacementPolicy"], "Failed");
  EXPECT_FALSE(out["spec"]["replicaSpecs"]["Coordinator"].contains("replacementPolicy"));

  manifest["spec"]["replicaSpecs"]["PS"]["replacementPolicy"] = "Terminating";
  EXPECT_THAT(Problems(manifest),
              ElementsAre("spec.replicaSpecs.PS.replacementPolicy: Unsupported value: "
                          "\"Terminating\": supported values: \"TerminatingOrFailed\", "
                          "\"Failed\""));
}

}  // namespace
}  // namespace tj::v1alpha1
