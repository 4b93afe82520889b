// The table of bad manifests: each goes through the whole path (YAML text -> JSON -> decode ->
// defaults -> validate) and must be reported at exactly the expected field path.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/load.h"

namespace tj::v1alpha1 {
namespace {

using ::testing::HasSubstr;

constexpr char kTemplate[] =
    "{spec: {containers: [{name: main, image: img, command: [tj-train]}]}}";

// A valid manifest unless a case changes it. A replica field set to "-" leaves that type out.
struct Manifest {
  std::string name = "job";
  std::string coordinator = "replicas: 1";
  std::string ps = "replicas: 1";
  std::string worker = "replicas: 2";
  std::string spec_extra;  // more lines under spec:, indented by two spaces
  std::string top_extra;   // more top-level lines

  std::string Yaml() const {
    std::string yaml = absl::StrCat("apiVersion: trainingjob.dev/v1alpha1\nkind: TrainingJob\n",
                                    "metadata:\n  name: ", name, "\nspec:\n  replicaSpecs:\n");
    for (const auto& [type, fields] :
         {std::pair{"Coordinator", coordinator}, {"PS", ps}, {"Worker", worker}}) {
      if (fields == "-") continue;
      absl::StrAppend(&yaml, "    ", type, ": {", fields, fields.empty() ? "" : ", ",
                      "template: ", kTemplate, "}\n");
    }
    return absl::StrCat(yaml, spec_extra, top_extra);
  }
};

struct BadCase {
  std::string name;
  Manifest manifest;
  std::string field;    // the exact path expected among the errors
  std::string message;  // a substring of that error's message
};

Manifest With(void (*change)(Manifest&)) {
  Manifest m;
  change(m);
  return m;
}

std::vector<BadCase> BadCases() {
  return {
      {"MissingCoordinator", With([](Manifest& m) { m.coordinator = "-"; }),
       "spec.replicaSpecs.Coordinator", "Required value"},
      {"MissingWorker", With([](Manifest& m) { m.worker = "-"; }), "spec.replicaSpecs.Worker",
       "Required value"},
      {"WorkerReplicasZero", With([](Manifest& m) { m.worker = "replicas: 0"; }),
       "spec.replicaSpecs.Worker.replicas", "Invalid value: 0: must be greater than or equal to 1"},
      {"PsReplicasNegative", With([](Manifest& m) { m.ps = "replicas: -1"; }),
       "spec.replicaSpecs.PS.replicas", "must be greater than or equal to 1"},
      {"CoordinatorReplicasTwo", With([](Manifest& m) { m.coordinator = "replicas: 2"; }),
       "spec.replicaSpecs.Coordinator.replicas",
       "Invalid value: 2: must be 1: a TrainingJob has exactly one coordinator"},
      {"ReplicasNotAnInteger", With([](Manifest& m) { m.worker = "replicas: two"; }),
       "spec.replicaSpecs.Worker.replicas", "Invalid value: \"two\": must be an integer"},
      {"ReplicasTooLarge", With([](Manifest& m) { m.worker = "replicas: 3000000000"; }),
       "spec.replicaSpecs.Worker.replicas", "must be a 32-bit integer"},
      {"UnknownRestartPolicy", With([](Manifest& m) { m.worker = "restartPolicy: Sometimes"; }),
       "spec.replicaSpecs.Worker.restartPolicy",
       "Unsupported value: \"Sometimes\": supported values: \"Never\", \"OnFailure\", "
       "\"Always\", \"ExitCode\""},
      {"RestartPolicyWrongCase", With([](Manifest& m) { m.ps = "restartPolicy: never"; }),
       "spec.replicaSpecs.PS.restartPolicy", "Unsupported value: \"never\""},
      {"UnknownReplicaType", With([](Manifest& m) { m.spec_extra = "    Chief: {replicas: 1}\n"; }),
       "spec.replicaSpecs.Chief",
       "Unsupported value: \"Chief\": supported values: \"Coordinator\", \"PS\", \"Worker\""},
      {"UnknownFieldInReplicaSpec", With([](Manifest& m) { m.worker = "replica: 2"; }),
       "spec.replicaSpecs.Worker.replica", "unknown field"},
      {"NegativeActiveDeadline",
       With([](Manifest& m) { m.spec_extra = "  runPolicy: {activeDeadlineSeconds: -5}\n"; }),
       "spec.runPolicy.activeDeadlineSeconds",
       "Invalid value: -5: must be greater than or equal to 1"},
      {"NegativeTtl",
       With([](Manifest& m) { m.spec_extra = "  runPolicy: {ttlSecondsAfterFinished: -1}\n"; }),
       "spec.runPolicy.ttlSecondsAfterFinished", "must be greater than or equal to 0"},
      {"NegativeBackoffLimit",
       With([](Manifest& m) { m.spec_extra = "  runPolicy: {backoffLimit: -1}\n"; }),
       "spec.runPolicy.backoffLimit", "must be greater than or equal to 0"},
      {"UnknownCleanPodPolicy",
       With([](Manifest& m) { m.spec_extra = "  runPolicy: {cleanPodPolicy: Some}\n"; }),
       "spec.runPolicy.cleanPodPolicy",
       "Unsupported value: \"Some\": supported values: \"All\", \"Running\", \"None\""},
      {"SuspendNotABoolean",
       With([](Manifest& m) { m.spec_extra = "  runPolicy: {suspend: \"yes\"}\n"; }),
       "spec.runPolicy.suspend", "must be a boolean"},
      {"UnknownFieldInRunPolicy",
       With([](Manifest& m) { m.spec_extra = "  runPolicy: {backofLimit: 3}\n"; }),
       "spec.runPolicy.backofLimit", "unknown field"},
      {"MinAvailableAboveReplicas", With([](Manifest& m) {
         m.spec_extra = "  runPolicy: {schedulingPolicy: {minAvailable: 5}}\n";
       }),
       "spec.runPolicy.schedulingPolicy.minAvailable", "must not exceed the job's 4 replicas"},
      {"UnknownFieldAtSpecLevel", With([](Manifest& m) { m.spec_extra = "  replicas: 3\n"; }),
       "spec.replicas", "unknown field"},
      {"UnknownTopLevelField", With([](Manifest& m) { m.top_extra = "specs: {}\n"; }), "specs",
       "unknown field"},
      {"UnknownMetadataField", With([](Manifest& m) { m.name = "job\n  lables: {a: b}"; }),
       "metadata.lables", "unknown field"},
      {"LabelValueNotAString", With([](Manifest& m) { m.name = "job\n  labels: {app: 3}"; }),
       "metadata.labels[app]", "must be a string"},
      {"RestartExitCodeZero",
       With([](Manifest& m) { m.spec_extra = "  faultTolerance: {restartExitCodes: [42, 0]}\n"; }),
       "spec.faultTolerance.restartExitCodes[1]", "exit code 0 means success"},
      {"RestartExitCodeTooLarge",
       With([](Manifest& m) { m.spec_extra = "  faultTolerance: {restartExitCodes: [256]}\n"; }),
       "spec.faultTolerance.restartExitCodes[0]", "must be an exit code from 1 to 255"},
      {"RestartExitCodeDuplicate",
       With([](Manifest& m) { m.spec_extra = "  faultTolerance: {restartExitCodes: [42, 42]}\n"; }),
       "spec.faultTolerance.restartExitCodes[1]", "Duplicate value: 42"},
      {"NegativeWorkerRecoveryTimeout", With([](Manifest& m) {
         m.spec_extra = "  faultTolerance: {workerRecoveryTimeoutSeconds: -1}\n";
       }),
       "spec.faultTolerance.workerRecoveryTimeoutSeconds", "must be greater than or equal to 0"},
      {"ZeroPsFailureThreshold", With([](Manifest& m) {
         m.spec_extra = "  faultTolerance: {transientPsFailureThreshold: 0}\n";
       }),
       "spec.faultTolerance.transientPsFailureThreshold", "must be greater than or equal to 1"},
      {"NegativePreemptionGrace",
       With([](Manifest& m) { m.spec_extra = "  preemption: {gracePeriodSeconds: -30}\n"; }),
       "spec.preemption.gracePeriodSeconds", "must be greater than or equal to 0"},
      {"CheckpointWithoutDir",
       With([](Manifest& m) { m.spec_extra = "  checkpoint: {intervalSteps: 100}\n"; }),
       "spec.checkpoint.dir", "Required value"},
      {"CheckpointKeepZero",
       With([](Manifest& m) { m.spec_extra = "  checkpoint: {dir: /ckpt, keep: 0}\n"; }),
       "spec.checkpoint.keep", "must be greater than or equal to 1"},
      {"CheckpointFullEveryZero",
       With([](Manifest& m) { m.spec_extra = "  checkpoint: {dir: /ckpt, fullEvery: 0}\n"; }),
       "spec.checkpoint.fullEvery", "must be greater than or equal to 1"},
      {"CheckpointFullEveryTooLarge",
       With([](Manifest& m) { m.spec_extra = "  checkpoint: {dir: /ckpt, fullEvery: 1001}\n"; }),
       "spec.checkpoint.fullEvery", "must be less than or equal to 1000"},
      {"CheckpointIntervalZero",
       With([](Manifest& m) { m.spec_extra = "  checkpoint: {dir: /ckpt, intervalSteps: 0}\n"; }),
       "spec.checkpoint.intervalSteps", "must be greater than or equal to 1"},
      {"OverLongName", With([](Manifest& m) { m.name = std::string(50, 'a'); }), "metadata.name",
       "must be no more than 49 characters: the replica name"},
      {"NameWithCapitals", With([](Manifest& m) { m.name = "Digits"; }), "metadata.name",
       "lowercase RFC 1035 label"},
      {"NameStartingWithDigit", With([](Manifest& m) { m.name = "1job"; }), "metadata.name",
       "starting with a letter"},
      {"MissingName", With([](Manifest& m) { m.name = "\"\""; }), "metadata.name",
       "Required value"},
  };
}

class BadManifestTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadManifestTest, ReportsTheExactFieldPath) {
  const BadCase& c = GetParam();
  CheckedTrainingJob checked = CheckTrainingJobText(c.manifest.Yaml());
  EXPECT_FALSE(checked.ok());
  EXPECT_FALSE(checked.job.has_value());
  bool found = false;
  for (const FieldError& e : checked.errors) {
    if (e.field == c.field && e.message.find(c.message) != std::string::npos) found = true;
  }
  EXPECT_TRUE(found) << "expected " << c.field << ": ..." << c.message << "...\ngot:\n"
                     << FormatFieldErrors("job.yaml", checked.errors) << "\nmanifest:\n"
                     << c.manifest.Yaml();
}

INSTANTIATE_TEST_SUITE_P(Manifests, BadManifestTest, ::testing::ValuesIn(BadCases()),
                         [](const auto& info) { return info.param.name; });

TEST(ManifestErrorsTest, TheValidBaseManifestIsValid) {
  CheckedTrainingJob checked = CheckTrainingJobText(Manifest{}.Yaml());
  EXPECT_TRUE(checked.ok()) << FormatFieldErrors("job.yaml", checked.errors);
  ASSERT_TRUE(checked.job.has_value());
  EXPECT_EQ(checked.job->metadata.name, "job");
}

TEST(ManifestErrorsTest, WrongApiVersionAndKind) {
  std::string yaml = Manifest{}.Yaml();
  yaml.replace(yaml.find("trainingjob.dev/v1alpha1"), 24, "kubeflow.org/v1");
  yaml.replace(yaml.find("kind: TrainingJob"), 17, "kind: TFJob");
  CheckedTrainingJob checked = CheckTrainingJobText(yaml);
  ASSERT_EQ(checked.errors.size(), 2u) << FormatFieldErrors("job.yaml", checked.errors);
  EXPECT_EQ(checked.errors[0].field, "apiVersion");
  EXPECT_EQ(checked.errors[0].message,
            "Unsupported value: \"kubeflow.org/v1\": supported values: "
            "\"trainingjob.dev/v1alpha1\"");
  EXPECT_EQ(checked.errors[1].field, "kind");
}

TEST(ManifestErrorsTest, BadYamlReportsLineAndColumn) {
  const std::string yaml =
      "apiVersion: trainingjob.dev/v1alpha1\n"
      "kind: TrainingJob\n"
      "metadata:\n"
      "  name: job\n"
      "spec:\n"
      "  replicaSpecs:\n"
      "    Coordinator: {replicas: 1\n"
      "    PS: {replicas: 1}\n";
  CheckedTrainingJob checked = CheckTrainingJobText(yaml);
  ASSERT_EQ(checked.errors.size(), 1u) << FormatFieldErrors("job.yaml", checked.errors);
  const FieldError& e = checked.errors[0];
  EXPECT_EQ(e.field, "");
  EXPECT_GE(e.line, 7);
  EXPECT_GT(e.column, 0);
  EXPECT_THAT(FormatFieldError("job.yaml", e),
              HasSubstr(absl::StrCat("job.yaml:", e.line, ":", e.column, ": YAML syntax error")));
}

TEST(ManifestErrorsTest, DuplicateKeyInAManifestIsReportedAtItsLine) {
  std::string yaml = Manifest{}.Yaml();
  yaml.replace(yaml.find("  name: job\n"), 12, "  name: job\n  name: other\n");
  CheckedTrainingJob checked = CheckTrainingJobText(yaml);
  ASSERT_EQ(checked.errors.size(), 1u);
  EXPECT_EQ(FormatFieldError("job.yaml", checked.errors[0]),
            "job.yaml:5:3: duplicate key \"name\" (first at line 4)");
}

TEST(ManifestErrorsTest, EveryProblemIsReported) {
  Manifest m;
  m.coordinator = "replicas: 2";
  m.worker = "replicas: 0, restartPolicy: Sometimes";
  m.spec_extra = "  runPolicy: {activeDeadlineSeconds: -1}\n  bogus: 1\n";
  CheckedTrainingJob checked = CheckTrainingJobText(m.Yaml());
  std::vector<std::string> fields;
  for (const FieldError& e : checked.errors) fields.push_back(e.field);
  EXPECT_THAT(fields, ::testing::UnorderedElementsAre("spec.replicaSpecs.Coordinator.replicas",
                                                      "spec.replicaSpecs.Worker.replicas",
                                                      "spec.replicaSpecs.Worker.restartPolicy",
                                                      "spec.bogus",
                                                      "spec.runPolicy.activeDeadlineSeconds"));
}

TEST(ManifestErrorsTest, NotAMapping) {
  CheckedTrainingJob checked = CheckTrainingJobText("- a\n- b\n");
  ASSERT_EQ(checked.errors.size(), 1u);
  EXPECT_THAT(checked.errors[0].message, HasSubstr("not a TrainingJob"));
}

TEST(ManifestErrorsTest, NullSectionsCountAsAbsent) {
  Manifest m;
  m.spec_extra = "  runPolicy:\n  checkpoint: ~\n";
  CheckedTrainingJob checked = CheckTrainingJobText(m.Yaml());
  EXPECT_TRUE(checked.ok()) << FormatFieldErrors("job.yaml", checked.errors);
}

TEST(ManifestErrorsTest, YamlBooleansFollowKubectl) {
  Manifest m;
  m.spec_extra = "  runPolicy: {suspend: yes}\n";
  CheckedTrainingJob checked = CheckTrainingJobText(m.Yaml());
  ASSERT_TRUE(checked.ok()) << FormatFieldErrors("job.yaml", checked.errors);
  EXPECT_EQ(checked.job->spec.run_policy.suspend, true);
}

TEST(ManifestErrorsTest, AnAliasBombIsOneErrorAtTheLineOfItsAlias) {
  Manifest m;
  // Ten copies of x3 (11,111 nodes each) in x4 cross the bound of 100,000 nodes on its line.
  m.top_extra =
      "x0: &x0 [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]\n"
      "x1: &x1 [*x0, *x0, *x0, *x0, *x0, *x0, *x0, *x0, *x0, *x0]\n"
      "x2: &x2 [*x1, *x1, *x1, *x1, *x1, *x1, *x1, *x1, *x1, *x1]\n"
      "x3: &x3 [*x2, *x2, *x2, *x2, *x2, *x2, *x2, *x2, *x2, *x2]\n"
      "x4: &x4 [*x3, *x3, *x3, *x3, *x3, *x3, *x3, *x3, *x3, *x3]\n";
  const std::string yaml = m.Yaml();
  CheckedTrainingJob checked = CheckTrainingJobText(yaml);
  ASSERT_EQ(checked.errors.size(), 1u) << FormatFieldErrors("job.yaml", checked.errors);
  const FieldError& e = checked.errors[0];
  EXPECT_EQ(e.message, "alias *x3: alias expansion exceeds 100000 nodes");
  // The line of x4 in the manifest.
  int x4_line = 1;
  for (size_t i = 0; i < yaml.find("x4:"); ++i) x4_line += yaml[i] == '\n';
  EXPECT_EQ(e.line, x4_line);
}

TEST(ManifestErrorsTest, ARecursiveAliasIsOneErrorNamingTheAlias) {
  Manifest m;
  m.top_extra = "loop: &loop {self: *loop}\n";
  CheckedTrainingJob checked = CheckTrainingJobText(m.Yaml());
  ASSERT_EQ(checked.errors.size(), 1u) << FormatFieldErrors("job.yaml", checked.errors);
  EXPECT_THAT(FormatFieldError("job.yaml", checked.errors[0]),
              HasSubstr(": alias *loop refers to a node that contains it"));
}

// Found by trainingjob_json_fuzzer: an object from the API server nested thousands of levels deep
// overflowed the stack when an error message echoed it (the echo serialized the whole value).
TEST(ManifestErrorsTest, AnObjectNestedThousandsDeepIsOneErrorNotAStackOverflow) {
  const std::string deep = std::string(50000, '[') + std::string(50000, ']');
  CheckedTrainingJob checked = CheckTrainingJobJson(
      nlohmann::json::parse("{\"kind\": \"TrainingJob\", \"spec\": " + deep + "}"));
  ASSERT_EQ(checked.errors.size(), 1u) << FormatFieldErrors("job.json", checked.errors);
  EXPECT_EQ(checked.errors[0].message, "nested deeper than 100 levels");
}

TEST(ManifestErrorsTest, AnEchoedValueIsCutShortHoweverLargeOrDeep) {
  const std::string deep = std::string(90, '[') + "1" + std::string(90, ']');
  const std::string large = "\"" + std::string(1 << 20, 'x') + "\"";
  for (const std::string& value : {deep, large}) {
    CheckedTrainingJob checked = CheckTrainingJobJson(nlohmann::json::parse(
        "{\"apiVersion\": \"trainingjob.dev/v1alpha1\", \"kind\": " + value + "}"));
    auto kind = std::find_if(checked.errors.begin(), checked.errors.end(),
                             [](const FieldError& e) { return e.field == "kind"; });
    ASSERT_NE(kind, checked.errors.end()) << FormatFieldErrors("job.json", checked.errors);
    EXPECT_LT(kind->message.size(), 200u) << kind->message;
  }
}

TEST(ManifestErrorsTest, LoadTrainingJobFileNamesTheFile) {
  absl::StatusOr<TrainingJob> missing = LoadTrainingJobFile("/nonexistent/job.yaml");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("/nonexistent/job.yaml"));

  absl::StatusOr<TrainingJob> bad =
      ParseTrainingJob(With([](Manifest& m) { m.worker = "replicas: 0"; }).Yaml(), "bad.yaml");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(bad.status().message()),
            "bad.yaml: spec.replicaSpecs.Worker.replicas: Invalid value: 0: must be greater than "
            "or equal to 1");
}

// Found by manifest_yaml_fuzzer: bytes that are not UTF-8 in a string of a pod template made the
// template's size check (nlohmann's dump) throw out of tjctl validate. They are measured instead.
TEST(ManifestErrorsTest, BytesThatAreNotUtf8InATemplateDoNotThrow) {
  Manifest m;
  m.worker = "replicas: 2";
  std::string yaml = m.Yaml();
  const size_t image = yaml.rfind("image: img");
  ASSERT_NE(image, std::string::npos);
  yaml.replace(image, 10, "image: \"im\xff\xfeg\"");
  CheckedTrainingJob checked;
  ASSERT_NO_THROW(checked = CheckTrainingJobText(yaml));
  ASSERT_TRUE(checked.job.has_value()) << FormatFieldErrors("job.yaml", checked.errors);
}

}  // namespace
}  // namespace tj::v1alpha1
