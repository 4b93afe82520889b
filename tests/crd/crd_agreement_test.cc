// The TrainingJob CRD (crds/trainingjob.dev_trainingjobs.yaml) against `tjctl validate`, on a real
// kube-apiserver (tests/kube-test-cluster/): both must accept every example and valid manifest
// with the same defaults, both must reject every invalid manifest under tests/crd/testdata/invalid
// with a message naming the field, and the scale and status subresources and printer columns
// behave as documented. A NEW disagreement fails; the known ones are listed below with reasons.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "api/v1alpha1/encode.h"
#include "api/v1alpha1/load.h"
#include "api/v1alpha1/status_json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/operator/kube/kube_cluster_env.h"
#include "tests/support/wait_for.h"
#include "tjctl/validate_command.h"

namespace tj {
namespace {

namespace fs = std::filesystem;
using kube::testing::KubeClusterEnvironment;
using kube::testing::RunCommand;
using nlohmann::json;
using ::testing::HasSubstr;

// Invalid manifests the two sides judge differently, by file name, with the reason. Keep each
// entry commented: a new disagreement must be a decision, not an accident.
//
// Rejected by the API server, accepted by `tjctl validate`: pod fields the CRD types but tjctl
// passes through untouched to the API server (which would reject the pod the operator creates).
const std::map<std::string, std::string> kServerOnlyRejections = {
    {"container-port-not-integer.yaml",
     "ports are typed in the CRD so that `kubectl apply` fails at once; tjctl leaves pod fields it "
     "does not read to the API server's pod validation"},
};
// Rejected by `tjctl validate`, accepted by the API server: rules OpenAPI and CEL cannot express.
// An entry here needs a reason and a note in docs/trainingjob-schema.md.
const std::map<std::string, std::string> kTjctlOnlyRejections = {
    {"template-over-64-kib.yaml",
     "a schema cannot measure an object's size; tjctl and the operator (which fails such a job) "
     "do, and the API server's own limits (3 MiB a request, 1.5 MiB in etcd) bound the rest"},
};

std::string SourceDir() { return TJ_SOURCE_DIR; }

std::string Quote(const std::string& s) { return "'" + s + "'"; }

struct CommandResult {
  bool ok = false;
  std::string output;  // stdout and stderr
};

CommandResult Kubectl(const std::string& args) {
  CommandResult result;
  result.output = RunCommand("kubectl --kubeconfig=" + Quote(KubeClusterEnvironment::kubeconfig()) +
                                 " --request-timeout=30s " + args + " 2>&1",
                             &result.ok);
  return result;
}

CommandResult TjctlValidate(const std::string& file) {
  ValidateOptions options;
  options.files = {file};
  std::ostringstream out;
  CommandResult result;
  result.ok = RunValidate(options, out) == 0;
  result.output = out.str();
  return result;
}

std::vector<std::string> YamlFilesIn(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Every manifest both sides must accept.
std::vector<std::string> ValidManifests() {
  std::vector<std::string> files;
  for (const std::string dir : {"/examples", "/tests/api/testdata", "/tests/crd/testdata/valid"}) {
    for (std::string& f : YamlFilesIn(SourceDir() + dir)) files.push_back(std::move(f));
  }
  return files;
}

// "# server: text" and "# tjctl: text" lines at the top of an invalid manifest: substrings each
// side's rejection must contain (the field path, and words a user understands).
struct Expectations {
  std::vector<std::string> server;
  std::vector<std::string> tjctl;
};

Expectations ReadExpectations(const std::string& file) {
  Expectations out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view rest(line);
    if (absl::ConsumePrefix(&rest, "# server: ")) out.server.emplace_back(rest);
    if (absl::ConsumePrefix(&rest, "# tjctl: ")) out.tjctl.emplace_back(rest);
  }
  return out;
}

class CrdAgreementTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!KubeClusterEnvironment::skip_reason().empty()) return;
    const CommandResult applied =
        Kubectl("apply -f " + Quote(SourceDir() + "/crds/trainingjob.dev_trainingjobs.yaml"));
    ASSERT_TRUE(applied.ok) << "the API server refused the CRD:\n" << applied.output;
    // Polled: `kubectl wait` fails outright while the CRD has no conditions yet.
    ASSERT_TRUE(testing::WaitFor([] {
      return Kubectl(
                 "get crd trainingjobs.trainingjob.dev -o "
                 "jsonpath='{.status.conditions[?(@.type==\"Established\")].status}'")
                 .output == "True";
    })) << "the CRD never became Established";
    // tests/api/testdata/digits.yaml names its namespace.
    for (const char* ns : {"ml", "crd-it"}) {
      const CommandResult created = Kubectl(absl::StrCat("create namespace ", ns));
      ASSERT_TRUE(created.ok || absl::StrContains(created.output, "AlreadyExists"))
          << created.output;
    }
  }

  void SetUp() override {
    if (!KubeClusterEnvironment::skip_reason().empty()) {
      GTEST_SKIP() << KubeClusterEnvironment::skip_reason();
    }
  }

  // The object the API server would store: defaults applied, unknown fields pruned.
  static json ServerDryRun(const std::string& file, CommandResult* result) {
    *result = Kubectl("apply --dry-run=server -o json -f " + Quote(file));
    if (!result->ok) return nullptr;
    return json::parse(result->output, nullptr, /*allow_exceptions=*/false);
  }
};

TEST_F(CrdAgreementTest, ExamplesAndValidManifestsAreAcceptedByBoth) {
  const std::vector<std::string> files = ValidManifests();
  ASSERT_GE(files.size(), 4u) << "the examples and test manifests went missing";
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    const CommandResult tjctl = TjctlValidate(file);
    EXPECT_TRUE(tjctl.ok) << tjctl.output;
    CommandResult server;
    ServerDryRun(file, &server);
    EXPECT_TRUE(server.ok) << server.output;
  }
}

// The CRD's `default:`s and WithDefaults() fill the same fields with the same values, and the
// API server prunes nothing tjctl keeps (pod template fields included).
TEST_F(CrdAgreementTest, ServerDefaultsEqualWithDefaults) {
  for (const std::string& file : ValidManifests()) {
    SCOPED_TRACE(file);
    CommandResult server;
    const json stored = ServerDryRun(file, &server);
    ASSERT_TRUE(server.ok) << server.output;
    ASSERT_TRUE(stored.is_object() && stored.contains("spec")) << server.output;
    const v1alpha1::CheckedTrainingJob checked = v1alpha1::CheckTrainingJobFile(file);
    ASSERT_TRUE(checked.ok());
    const json ours = v1alpha1::TrainingJobToJson(*checked.job);
    EXPECT_EQ(stored["spec"], ours["spec"])
        << "server: " << stored["spec"].dump(2) << "\ntjctl: " << ours["spec"].dump(2);
  }
}

// A manifest whose pod template holds `bytes` of annotation: too large to keep in the repository.
std::string ManifestWithLargeTemplate(const std::string& expectations, size_t bytes) {
  const std::string container =
      "      template:\n        spec:\n          containers:\n          - name: trainer\n"
      "            image: trainingjob/tj-runtime:0.1.0\n";
  return absl::StrCat(expectations,
                      "apiVersion: trainingjob.dev/v1alpha1\nkind: TrainingJob\n"
                      "metadata: {name: bad}\nspec:\n  replicaSpecs:\n    Coordinator:\n",
                      container, "    PS:\n", container, "    Worker:\n",
                      "      template:\n        metadata:\n          annotations:\n"
                      "            blob: \"",
                      std::string(bytes, 'x'), "\"\n",
                      "        spec:\n          containers:\n          - name: trainer\n"
                      "            image: trainingjob/tj-runtime:0.1.0\n");
}

// The catalogue's cases too large for files: written to the work directory.
std::vector<std::string> GeneratedInvalidManifests() {
  const std::string dir = KubeClusterEnvironment::workdir() + "/generated-invalid";
  fs::create_directories(dir);
  const std::vector<std::pair<std::string, std::string>> cases = {
      // Over the template limit, well within what the API server stores.
      {"template-over-64-kib.yaml",
       ManifestWithLargeTemplate(
           "# A 100 KiB pod template: copied into every pod of its type.\n"
           "# tjctl: spec.replicaSpecs.Worker.template: Too long: must have at most 65536 bytes\n",
           100 * 1024)},
      // Over the API server's request limit (3 MiB) as well, and over tjctl's manifest size limit
      // (also 3 MiB), which refuses the file before parsing it.
      {"template-4-mib.yaml",
       ManifestWithLargeTemplate(
           "# A 4 MiB pod template.\n"
           "# server: Request entity too large\n"
           "# tjctl: larger than 3 MiB: not a TrainingJob manifest\n",
           4 * 1024 * 1024)},
  };
  std::vector<std::string> files;
  for (const auto& [name, text] : cases) {
    files.push_back(dir + "/" + name);
    std::ofstream(files.back()) << text;
  }
  return files;
}

TEST_F(CrdAgreementTest, InvalidManifestsAreRejectedByBothNamingTheField) {
  std::vector<std::string> files = YamlFilesIn(SourceDir() + "/tests/crd/testdata/invalid");
  ASSERT_GE(files.size(), 90u) << "the catalogue of invalid and hostile manifests went missing";
  for (std::string& file : GeneratedInvalidManifests()) files.push_back(std::move(file));
  std::set<std::string> seen_allow_listed;
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    const std::string name = fs::path(file).filename().string();
    const Expectations expect = ReadExpectations(file);
    const bool server_only = kServerOnlyRejections.count(name) > 0;
    const bool tjctl_only = kTjctlOnlyRejections.count(name) > 0;
    if (server_only || tjctl_only) seen_allow_listed.insert(name);

    const CommandResult server = Kubectl("apply --dry-run=server -f " + Quote(file));
    const CommandResult tjctl = TjctlValidate(file);
    if (tjctl_only) {
      EXPECT_TRUE(server.ok) << "allow-listed as tjctl-only, but the API server now rejects it "
                                "too: remove it from kTjctlOnlyRejections\n"
                             << server.output;
    } else {
      ASSERT_FALSE(expect.server.empty()) << "no '# server:' expectation in the file";
      EXPECT_FALSE(server.ok) << "the API server accepted it:\n" << server.output;
      for (const std::string& text : expect.server) {
        EXPECT_THAT(server.output, HasSubstr(text));
      }
    }
    if (server_only) {
      EXPECT_TRUE(tjctl.ok) << "allow-listed as server-only, but tjctl now rejects it too: "
                               "remove it from kServerOnlyRejections\n"
                            << tjctl.output;
    } else {
      ASSERT_FALSE(expect.tjctl.empty()) << "no '# tjctl:' expectation in the file";
      EXPECT_FALSE(tjctl.ok) << "tjctl validate accepted it:\n" << tjctl.output;
      for (const std::string& text : expect.tjctl) {
        EXPECT_THAT(tjctl.output, HasSubstr(text));
      }
    }
  }
  // A stale allow-list entry (file renamed or removed) would hide nothing but mislead readers.
  for (const auto& list : {kServerOnlyRejections, kTjctlOnlyRejections}) {
    for (const auto& [name, reason] : list) {
      EXPECT_TRUE(seen_allow_listed.count(name)) << name << " is allow-listed but does not exist";
    }
  }
}

std::string JobManifest(const std::string& name, int workers) {
  return absl::StrCat(
      R"({"apiVersion":"trainingjob.dev/v1alpha1","kind":"TrainingJob",)",
      R"("metadata":{"name":")", name, R"(","namespace":"crd-it"},)", R"("spec":{"replicaSpecs":{)",
      R"("Coordinator":{"template":{"spec":{"containers":[{"name":"t","image":"i"}]}}},)",
      R"("PS":{"template":{"spec":{"containers":[{"name":"t","image":"i"}]}}},)",
      R"("Worker":{"replicas":)", workers,
      R"(,"template":{"spec":{"containers":[{"name":"t","image":"i"}]}}}}}})");
}

CommandResult ApplyJson(const std::string& manifest) {
  static int counter = 0;
  const std::string file =
      absl::StrCat(KubeClusterEnvironment::workdir(), "/crd-test-", ++counter, ".json");
  std::ofstream(file) << manifest;
  return Kubectl("apply -f " + Quote(file));
}

std::string WorkerReplicas(const std::string& name) {
  return Kubectl("-n crd-it get tj " + name + " -o jsonpath='{.spec.replicaSpecs.Worker.replicas}'")
      .output;
}

// `kubectl scale tj/NAME` changes the workers, within the same rules as the spec.
TEST_F(CrdAgreementTest, ScaleSubresourceResizesWorkersWithinTheRules) {
  ASSERT_TRUE(ApplyJson(JobManifest("scaled", 2)).ok);
  const CommandResult up = Kubectl("-n crd-it scale tj/scaled --replicas=5");
  ASSERT_TRUE(up.ok) << up.output;
  EXPECT_EQ(WorkerReplicas("scaled"), "5");

  const CommandResult zero = Kubectl("-n crd-it scale tj/scaled --replicas=0");
  EXPECT_FALSE(zero.ok);
  EXPECT_THAT(zero.output, HasSubstr("spec.replicaSpecs.Worker.replicas"));
  EXPECT_EQ(WorkerReplicas("scaled"), "5");

  // The limits hold on scale: a type's maximum, and the total's CEL rule (1 + 1 + 999).
  const CommandResult huge = Kubectl("-n crd-it scale tj/scaled --replicas=2000000000");
  EXPECT_FALSE(huge.ok);
  EXPECT_THAT(huge.output, HasSubstr("spec.replicaSpecs.Worker.replicas"));
  EXPECT_THAT(huge.output, HasSubstr("less than or equal to 1000"));
  const CommandResult total = Kubectl("-n crd-it scale tj/scaled --replicas=999");
  EXPECT_FALSE(total.ok);
  EXPECT_THAT(total.output, HasSubstr("must be at most 1000 in total"));
  EXPECT_EQ(WorkerReplicas("scaled"), "5");
  const CommandResult most = Kubectl("-n crd-it scale tj/scaled --replicas=998");
  EXPECT_TRUE(most.ok) << most.output;
  EXPECT_EQ(WorkerReplicas("scaled"), "998");
}

std::string ManagedBy(const std::string& name) {
  return Kubectl("-n crd-it get tj " + name + " -o jsonpath='{.spec.managedBy}'").output;
}

// spec.managedBy is set at creation or never: changed, added or removed later, the API server
// refuses the update naming the field, and the job keeps its value.
TEST_F(CrdAgreementTest, ManagedByIsImmutableAfterCreation) {
  json handed = json::parse(JobManifest("handed", 2));
  handed["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue";
  ASSERT_TRUE(ApplyJson(handed.dump()).ok);
  const CommandResult changed =
      Kubectl("-n crd-it patch tj handed --type=merge -p " +
              Quote(R"({"spec":{"managedBy":"trainingjob.dev/tj-operator"}})"));
  EXPECT_FALSE(changed.ok);
  EXPECT_THAT(changed.output, HasSubstr("spec.managedBy: Invalid value"));
  EXPECT_THAT(changed.output, HasSubstr("is immutable after creation"));
  const CommandResult removed = Kubectl("-n crd-it patch tj handed --type=json -p " +
                                        Quote(R"([{"op":"remove","path":"/spec/managedBy"}])"));
  EXPECT_FALSE(removed.ok);
  EXPECT_THAT(removed.output, HasSubstr("spec.managedBy"));
  EXPECT_EQ(ManagedBy("handed"), "kueue.x-k8s.io/multikueue");

  ASSERT_TRUE(ApplyJson(JobManifest("ours", 2)).ok);
  const CommandResult added = Kubectl("-n crd-it patch tj ours --type=merge -p " +
                                      Quote(R"({"spec":{"managedBy":"example.com/other"}})"));
  EXPECT_FALSE(added.ok);
  EXPECT_THAT(added.output, HasSubstr("spec.managedBy"));
  EXPECT_EQ(ManagedBy("ours"), "");
  // Other fields of the same job still change.
  const CommandResult scaled = Kubectl("-n crd-it scale tj/handed --replicas=3");
  EXPECT_TRUE(scaled.ok) << scaled.output;
}

// What the operator writes (TrainingJobStatusToJson of a status with every field set) is kept
// by the status subresource unchanged: the CRD's status schema covers the C++ status.
TEST_F(CrdAgreementTest, StatusSchemaKeepsEveryFieldTheOperatorWrites) {
  ASSERT_TRUE(ApplyJson(JobManifest("with-status", 3)).ok);
  v1alpha1::TrainingJobStatus status;
  status.conditions.push_back({.type = v1alpha1::ConditionType::kCreated,
                               .status = v1alpha1::ConditionStatus::kTrue,
                               .reason = "JobCreated",
                               .message = "pods created",
                               .last_transition_time = absl::FromUnixSeconds(1714564800)});
  status.conditions.push_back({.type = v1alpha1::ConditionType::kRunning,
                               .status = v1alpha1::ConditionStatus::kTrue,
                               .reason = "CoordinatorRunning",
                               .message = "training",
                               .last_transition_time = absl::FromUnixSeconds(1714564860)});
  for (v1alpha1::ReplicaType type : v1alpha1::kReplicaTypes) {
    status.replica_statuses[type] = {.active = 1, .succeeded = 2, .failed = 3, .restarts = 4};
  }
  status.step = 1200;
  status.start_time = absl::FromUnixSeconds(1714564800);
  status.completion_time = absl::FromUnixSeconds(1714568400);
  status.restart_count = 5;
  status.coordinator_restarts = 1;
  status.observed_generation = 1;
  v1alpha1::JobGoodput goodput;
  goodput.previous_runs = {.wall = 120.5, .productive = 50.25, .lost = {1, 2, 3, 4, 5, 55.25}};
  goodput.last_run = {.run = "0a1b2c3d4e5f6a7b",
                      .started_unix_seconds = 1714564921.5,
                      .seconds = {.wall = 30.5, .productive = 25.5, .lost = {0, 5, 0, 0, 0, 0}},
                      .productive_at_checkpoint = 12.5};
  status.goodput_account = goodput;
  status.goodput_seconds = {.wall = 151, .productive = 75.75, .lost = {1, 7, 3, 4, 5, 55.25}};
  status.goodput = 0.502;
  const json written = v1alpha1::TrainingJobStatusToJson(status);

  const CommandResult patched =
      Kubectl("-n crd-it patch tj with-status --subresource=status --type=merge -p " +
              Quote(json{{"status", written}}.dump()));
  ASSERT_TRUE(patched.ok) << patched.output;
  const CommandResult read = Kubectl("-n crd-it get tj with-status -o json");
  ASSERT_TRUE(read.ok) << read.output;
  const json stored = json::parse(read.output, nullptr, false);
  ASSERT_TRUE(stored.is_object() && stored.contains("status")) << read.output;
  EXPECT_EQ(stored["status"], written);
}

// The fields the CRD adds for kubectl and autoscalers: printer columns, the scale subresource's
// status, and the state enum.
TEST_F(CrdAgreementTest, PrinterColumnsAndScaleStatusReadTheStatus) {
  ASSERT_TRUE(ApplyJson(JobManifest("printed", 3)).ok);
  const std::string selector =
      "trainingjob.dev/job-name=printed,trainingjob.dev/replica-type=worker";
  const json patch = {{"status",
                       {{"state", "Running"},
                        {"step", 4321},
                        {"restartCount", 2},
                        {"goodput", 0.931},
                        {"lastCheckpointStep", 4300},
                        {"coordinatorRestarts", 1},
                        {"preemptions", 3},
                        {"conditions", json::array({{{"type", "Stuck"},
                                                     {"status", "True"},
                                                     {"reason", "Unschedulable"},
                                                     {"message", "0/3 nodes are available"},
                                                     {"lastTransitionTime", "2026-11-26T04:00:00Z"}},
                                                    {{"type", "Running"},
                                                     {"status", "True"},
                                                     {"reason", "Running"},
                                                     {"message", "the coordinator is running"},
                                                     {"lastTransitionTime", "2026-11-26T04:00:00Z"}}})},
                        {"replicaStatuses", {{"Worker", {{"active", 3}}}}},
                        {"workerSelector", selector}}}};
  const CommandResult patched = Kubectl(
      "-n crd-it patch tj printed --subresource=status --type=merge -p " + Quote(patch.dump()));
  ASSERT_TRUE(patched.ok) << patched.output;

  const CommandResult table = Kubectl("-n crd-it get tj printed");  // the short name
  ASSERT_TRUE(table.ok) << table.output;
  const std::vector<std::string> lines = absl::StrSplit(table.output, '\n');
  ASSERT_EQ(lines.size(), 2u) << table.output;
  const std::vector<std::string> header = absl::StrSplit(lines[0], ' ', absl::SkipEmpty());
  EXPECT_THAT(header, ::testing::ElementsAre("NAME", "STATE", "STUCK", "STEP", "WORKERS", "READY",
                                             "RESTARTS", "GOODPUT", "AGE"));
  const std::vector<std::string> row = absl::StrSplit(lines[1], ' ', absl::SkipEmpty());
  ASSERT_EQ(row.size(), 8u) << table.output;
  EXPECT_EQ(row[0], "printed");
  EXPECT_EQ(row[1], "Running");
  EXPECT_EQ(row[2], "Unschedulable") << "the Stuck condition's reason, beside the state";
  EXPECT_EQ(row[3], "4321");
  EXPECT_EQ(row[4], "3");
  EXPECT_EQ(row[5], "2");
  EXPECT_EQ(row[6], "0.931");

  // -o wide: the checkpoint, coordinator restarts and preemptions (docs/operator.md, Status).
  const CommandResult wide = Kubectl("-n crd-it get tj printed -o wide");
  ASSERT_TRUE(wide.ok) << wide.output;
  const std::vector<std::string> wide_lines = absl::StrSplit(wide.output, '\n', absl::SkipEmpty());
  ASSERT_EQ(wide_lines.size(), 2u) << wide.output;
  EXPECT_THAT(std::vector<std::string>(absl::StrSplit(wide_lines[0], ' ', absl::SkipEmpty())),
              ::testing::ElementsAre("NAME", "STATE", "STUCK", "STEP", "WORKERS", "READY",
                                     "RESTARTS", "GOODPUT", "CHECKPOINT", "COORDINATOR",
                                     "RESTARTS", "PREEMPTIONS", "AGE"));
  const std::vector<std::string> wide_row =
      absl::StrSplit(wide_lines[1], ' ', absl::SkipEmpty());
  ASSERT_EQ(wide_row.size(), 11u) << wide.output;
  EXPECT_EQ(wide_row[7], "4300");
  EXPECT_EQ(wide_row[8], "1");
  EXPECT_EQ(wide_row[9], "3");

  const CommandResult scale = Kubectl(
      "get --raw /apis/trainingjob.dev/v1alpha1/namespaces/crd-it/trainingjobs/printed/scale");
  ASSERT_TRUE(scale.ok) << scale.output;
  const json scale_object = json::parse(scale.output, nullptr, false);
  ASSERT_TRUE(scale_object.is_object()) << scale.output;
  EXPECT_EQ(scale_object["spec"].value("replicas", -1), 3);
  EXPECT_EQ(scale_object["status"].value("replicas", -1), 3);
  EXPECT_EQ(scale_object["status"].value("selector", ""), selector);

  const CommandResult bad_state =
      Kubectl("-n crd-it patch tj printed --subresource=status --type=merge -p " +
              Quote(R"({"status":{"state":"Finished"}})"));
  EXPECT_FALSE(bad_state.ok);
  EXPECT_THAT(bad_state.output, HasSubstr("status.state: Unsupported value: \"Finished\""));
}

}  // namespace
}  // namespace tj

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new tj::kube::testing::KubeClusterEnvironment);
  return RUN_ALL_TESTS();
}
