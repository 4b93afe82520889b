// The good manifest's round trip: parse -> defaults -> validate -> JSON and back, with every
// field of the pod templates the schema does not model preserved.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "api/v1alpha1/decode.h"
#include "api/v1alpha1/encode.h"
#include "api/v1alpha1/load.h"
#include "api/v1alpha1/yaml_json.h"

namespace tj::v1alpha1 {
namespace {

using ::testing::ElementsAre;
using json = nlohmann::json;

const std::string kDigits = std::string(TJ_API_TESTDATA) + "/digits.yaml";

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TrainingJob LoadDigits() {
  absl::StatusOr<TrainingJob> job = LoadTrainingJobFile(kDigits);
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *job : TrainingJob{};
}

TEST(RoundTripTest, DigitsFixtureLoads) {
  TrainingJob job = LoadDigits();
  EXPECT_EQ(job.api_version, kApiVersion);
  EXPECT_EQ(job.kind, kKind);
  EXPECT_EQ(job.metadata.name, "digits");
  EXPECT_EQ(job.metadata.namespace_name, "ml");
  EXPECT_EQ(job.metadata.labels.at("app.kubernetes.io/name"), "digits");
  ASSERT_EQ(job.spec.replica_specs.size(), 3u);
  EXPECT_EQ(job.spec.replica_specs.at(ReplicaType::kWorker).replicas, 2);
  EXPECT_EQ(job.spec.replica_specs.at(ReplicaType::kWorker).restart_policy,
            RestartPolicy::kOnFailure);
  // Defaults filled in.
  EXPECT_EQ(job.spec.replica_specs.at(ReplicaType::kPs).restart_policy, RestartPolicy::kExitCode);
  EXPECT_EQ(job.spec.run_policy.backoff_limit, 6);
  EXPECT_EQ(job.spec.run_policy.active_deadline_seconds, 600);
  EXPECT_EQ(job.spec.fault_tolerance.worker_recovery_timeout_seconds, 3600);
  ASSERT_TRUE(job.spec.checkpoint.has_value());
  EXPECT_EQ(job.spec.checkpoint->dir, "/checkpoints/digits");
  EXPECT_EQ(job.spec.checkpoint->interval_steps, 500);
  EXPECT_EQ(job.spec.checkpoint->keep, 3);
  // Valid for tjctl run too: every container has a command.
  EXPECT_TRUE(LoadTrainingJobFile(kDigits, {ValidationTarget::kLocal}).ok());
}

TEST(RoundTripTest, TypedTemplateAccessors) {
  TrainingJob job = LoadDigits();
  const PodTemplate& tmpl = job.spec.replica_specs.at(ReplicaType::kCoordinator).pod_template;
  EXPECT_EQ(tmpl.labels(), (std::map<std::string, std::string>{{"team", "ml-platform"}}));
  EXPECT_TRUE(tmpl.annotations().empty());
  EXPECT_EQ(tmpl.termination_grace_period_seconds(), 30);
  EXPECT_EQ(tmpl.restart_policy(), std::nullopt);
  std::vector<Container> containers = tmpl.containers();
  ASSERT_EQ(containers.size(), 1u);
  const Container& c = containers[0];
  EXPECT_EQ(c.name, "trainer");
  EXPECT_EQ(c.image, "ghcr.io/trainingjob-dev/tj-runtime:0.1.0");
  EXPECT_THAT(c.command, ElementsAre("tj-train"));
  EXPECT_THAT(c.args, ElementsAre("--model=softmax", "--data=/data/digits.csv.gz", "--steps=2000"));
  ASSERT_EQ(c.env.size(), 2u);
  EXPECT_EQ(c.env[0].name, "TJ_LOG_LEVEL");
  EXPECT_EQ(c.env[0].value, "info");
  EXPECT_EQ(c.env[1].value, std::nullopt);
  EXPECT_EQ(c.env[1].value_from, json::parse(R"({"fieldRef": {"fieldPath": "status.podIP"}})"));
  EXPECT_EQ(c.resources, json::parse(R"({"requests": {"cpu": "1", "memory": "1Gi"}})"));
  EXPECT_EQ(c.volume_mounts, json::parse(R"([{"name": "data", "mountPath": "/data"}])"));
  // 0644 is octal, as kubectl reads it.
  EXPECT_EQ(tmpl.volumes()[0]["configMap"]["defaultMode"], 420);
}

TEST(RoundTripTest, UnknownTemplateFieldsArePreserved) {
  json out = TrainingJobToJson(LoadDigits());
  const json& specs = out["spec"]["replicaSpecs"];
  const json& coordinator = specs["Coordinator"]["template"];
  EXPECT_EQ(coordinator["spec"]["nodeSelector"], json::parse(R"({"kubernetes.io/arch": "amd64"})"));
  EXPECT_EQ(coordinator["spec"]["containers"][0]["securityContext"],
            json::parse(R"({"runAsNonRoot": true})"));
  EXPECT_EQ(specs["Worker"]["template"]["spec"]["tolerations"],
            json::parse(R"([{"key": "spot", "operator": "Exists"}])"));
  // The template is exactly what the file holds.
  json file = *YamlToJson(ReadText(kDigits), kDigits);
  for (const char* type : {"Coordinator", "PS", "Worker"}) {
    EXPECT_EQ(specs[type]["template"], file["spec"]["replicaSpecs"][type]["template"]) << type;
  }
}

TEST(RoundTripTest, DefaultedJsonHasEveryDefault) {
  json out = TrainingJobToJson(LoadDigits());
  EXPECT_EQ(out["spec"]["replicaSpecs"]["PS"]["restartPolicy"], "ExitCode");
  EXPECT_EQ(out["spec"]["runPolicy"],
            json::parse(R"({"activeDeadlineSeconds": 600, "backoffLimit": 6,
                            "cleanPodPolicy": "Running", "suspend": false})"));
  EXPECT_EQ(out["spec"]["faultTolerance"],
            json::parse(R"({"restartExitCodes": [42], "workerRecoveryTimeoutSeconds": 3600,
                            "transientPsFailureThreshold": 3})"));
  EXPECT_EQ(out["spec"]["preemption"], json::parse(R"({"gracePeriodSeconds": 0})"));
  EXPECT_EQ(out["spec"]["checkpoint"],
            json::parse(R"({"dir": "/checkpoints/digits", "intervalSteps": 500, "keep": 3,
                            "fullEvery": 10})"));
  EXPECT_FALSE(out.contains("status"));
}

TEST(RoundTripTest, JsonOutputLoadsBackToTheSameJob) {
  TrainingJob job = LoadDigits();
  json out = TrainingJobToJson(job);
  CheckedTrainingJob again = CheckTrainingJobJson(out);
  ASSERT_TRUE(again.ok()) << FormatFieldErrors("json", again.errors);
  EXPECT_EQ(*again.job, job);
  // And from JSON text, through the YAML reader.
  absl::StatusOr<TrainingJob> from_text = ParseTrainingJob(out.dump(2), "digits.json");
  ASSERT_TRUE(from_text.ok()) << from_text.status();
  EXPECT_EQ(*from_text, job);
}

TEST(RoundTripTest, DecodeThenEncodeWithoutDefaultsIsTheIdentity) {
  json file = *YamlToJson(ReadText(kDigits), kDigits);
  DecodedTrainingJob decoded = DecodeTrainingJob(file);
  ASSERT_TRUE(decoded.errors.empty()) << FormatFieldErrors("digits", decoded.errors);
  EXPECT_EQ(TrainingJobToJson(decoded.job), file);
}

TEST(RoundTripTest, ApiServerFieldsSurvive) {
  json file = *YamlToJson(ReadText(kDigits), kDigits);
  file["metadata"]["resourceVersion"] = "991";
  file["metadata"]["uid"] = "5f0c";
  file["metadata"]["ownerReferences"] = json::array();
  file["status"] = json::parse(R"({"restartCount": 2, "coordinatorRestarts": 1, "step": 1500})");
  CheckedTrainingJob checked = CheckTrainingJobJson(file);
  ASSERT_TRUE(checked.ok()) << FormatFieldErrors("digits", checked.errors);
  json out = TrainingJobToJson(*checked.job);
  EXPECT_EQ(out["metadata"]["resourceVersion"], "991");
  EXPECT_EQ(out["metadata"]["uid"], "5f0c");
  EXPECT_EQ(out["metadata"]["ownerReferences"], json::array());
  EXPECT_EQ(out["status"], file["status"]);
}

}  // namespace
}  // namespace tj::v1alpha1
