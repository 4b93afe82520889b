// The pieces `tjctl run` is made of, without processes: restart backoff, container env
// resolution and $(VAR) expansion, the launch plan's checks, the status line, the files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "api/v1alpha1/load.h"
#include "coordinator/checkpoint/atomic_file.h"
#include "tests/support/temp_dir.h"
#include "tjctl/local/container_env.h"
#include "tjctl/local/disruption_marker.h"
#include "tjctl/local/launch_plan.h"
#include "tjctl/local/metrics_targets.h"
#include "tjctl/local/progress_display.h"
#include "tjctl/local/progress_file.h"
#include "tjctl/local/replica_log.h"
#include "tjctl/local/restart_backoff.h"
#include "tjctl/local/status_file.h"

namespace tj::local {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;
using ::testing::_;

// A replica given notice holds its successor back (jobcontrol/replacement.h) only while its
// marker is younger than the grace period plus the slack: a `tjctl preempt` killed before it
// terminated the replica must not hold the coordinator's successor for ever.
TEST(DisruptionMarkerTest, AMarkerHoldsForItsGracePlusTheSlackAndThenNoLonger) {
  testing::TempDir dir;
  const std::string work = dir.path();
  EXPECT_FALSE(HasDisruptionMarker(work, "digits-ps-0"));
  ASSERT_TRUE(WriteDisruptionMarker(work, "digits-ps-0", "tjctl preempt", absl::Seconds(60)).ok());
  const absl::Time now = absl::Now();
  EXPECT_TRUE(HasDisruptionMarker(work, "digits-ps-0", now));
  EXPECT_TRUE(HasDisruptionMarker(work, "digits-ps-0",
                                  now + absl::Seconds(60) + kDisruptionMarkerSlack -
                                      absl::Seconds(5)));
  EXPECT_FALSE(HasDisruptionMarker(work, "digits-ps-0",
                                   now + absl::Seconds(60) + kDisruptionMarkerSlack +
                                       absl::Seconds(5)));
  // A marker without a grace line (an older tjctl) holds for the slack alone.
  {
    std::ofstream(DisruptionMarkerPath(work, "digits-ps-1")) << "tjctl preempt\n";
  }
  EXPECT_TRUE(HasDisruptionMarker(work, "digits-ps-1", now + kDisruptionMarkerSlack -
                                                           absl::Seconds(5)));
  EXPECT_FALSE(HasDisruptionMarker(work, "digits-ps-1", now + kDisruptionMarkerSlack +
                                                            absl::Seconds(5)));
  EXPECT_TRUE(ConsumeDisruptionMarker(work, "digits-ps-0"));
  EXPECT_FALSE(HasDisruptionMarker(work, "digits-ps-0", now));
}

TEST(RestartBackoffTest, ImmediateThenDoublingFromHalfASecondCappedAtTenSeconds) {
  RestartBackoff backoff;
  const absl::Duration short_run = absl::Seconds(1);
  std::vector<absl::Duration> delays;
  for (int i = 0; i < 8; ++i) delays.push_back(backoff.Next(short_run));
  EXPECT_EQ(delays, (std::vector<absl::Duration>{
                        absl::ZeroDuration(), absl::Milliseconds(500), absl::Seconds(1),
                        absl::Seconds(2), absl::Seconds(4), absl::Seconds(8), absl::Seconds(10),
                        absl::Seconds(10)}));
}

TEST(RestartBackoffTest, ARunOfAMinuteResetsTheBackoff) {
  RestartBackoff backoff;
  backoff.Next(absl::Seconds(1));
  backoff.Next(absl::Seconds(1));
  EXPECT_EQ(backoff.Next(absl::Seconds(1)), absl::Seconds(1));
  EXPECT_EQ(backoff.Next(absl::Seconds(60)), absl::ZeroDuration());
  EXPECT_EQ(backoff.Next(absl::Seconds(1)), absl::Milliseconds(500));
}

TEST(ExpandVariablesTest, KubernetesSemantics) {
  const EnvList vars = {{"A", "a"}, {"B", "b1"}, {"B", "b2"}};
  EXPECT_EQ(ExpandVariables("$(A)-$(B)", vars), "a-b2");
  EXPECT_EQ(ExpandVariables("$(UNDEFINED)/x", vars), "$(UNDEFINED)/x");
  EXPECT_EQ(ExpandVariables("$$(A) costs $$5", vars), "$(A) costs $5");
  EXPECT_EQ(ExpandVariables("$A and $(A", vars), "$A and $(A");
  EXPECT_EQ(ExpandVariables("trailing $", vars), "trailing $");
}

v1alpha1::EnvVar ValueFrom(const std::string& name, const nlohmann::json& value_from) {
  return v1alpha1::EnvVar{name, std::nullopt, value_from};
}

TEST(ContainerEnvTest, ResolvesLocalFieldRefsAndExpandsValues) {
  const LocalFieldValues values{"job-worker-1", "ml", "127.0.0.1", "host1"};
  const std::vector<v1alpha1::EnvVar> env = {
      ValueFrom("POD", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}),
      ValueFrom("NS", {{"fieldRef", {{"fieldPath", "metadata.namespace"}}}}),
      ValueFrom("IP", {{"fieldRef", {{"apiVersion", "v1"}, {"fieldPath", "status.podIP"}}}}),
      ValueFrom("NODE", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}),
      {"LABEL", "$(POD)@$(NODE) in $(TJ_JOB_NAME)", std::nullopt},
      {"EMPTY", std::nullopt, std::nullopt},
  };
  v1alpha1::FieldErrors errors;
  const EnvList out = ResolveContainerEnv(env, values, {{"TJ_JOB_NAME", "job"}}, "c", errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(out, (EnvList{{"POD", "job-worker-1"},
                          {"NS", "ml"},
                          {"IP", "127.0.0.1"},
                          {"NODE", "host1"},
                          {"LABEL", "job-worker-1@host1 in job"},
                          {"EMPTY", ""}}));
}

TEST(ContainerEnvTest, ValueFromWithoutALocalMeaningIsAnErrorAtItsField) {
  const std::vector<v1alpha1::EnvVar> env = {
      ValueFrom("TOKEN", {{"secretKeyRef", {{"name", "s"}, {"key", "k"}}}}),
      ValueFrom("HOST_IP", {{"fieldRef", {{"fieldPath", "status.hostIP"}}}}),
  };
  v1alpha1::FieldErrors errors;
  ResolveContainerEnv(env, {}, {}, "spec.containers[0]", errors);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].field, "spec.containers[0].env[0].valueFrom.secretKeyRef");
  EXPECT_THAT(errors[0].message, HasSubstr("not available locally"));
  EXPECT_EQ(errors[1].field, "spec.containers[0].env[1].valueFrom.fieldRef.fieldPath");
  EXPECT_THAT(errors[1].message, HasSubstr("\"status.hostIP\""));
}

v1alpha1::TrainingJob Job(const std::string& yaml) {
  auto job = v1alpha1::ParseTrainingJob(yaml, "job.yaml",
                                        {v1alpha1::ValidationTarget::kLocal});
  EXPECT_TRUE(job.ok()) << job.status();
  return *job;
}

RunPaths Paths() {
  return RunPaths{
      "/w", "/w/logs", "/w/progress.json", "/w/checkpoints", "/w/job-token", "/w/credentials", ""};
}

constexpr char kJobHead[] =
    "apiVersion: trainingjob.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: j}\n"
    "spec:\n  checkpoint: {dir: /ckpt}\n  replicaSpecs:\n";

TEST(LaunchPlanTest, CommandArgsEnvGraceAndPaths) {
  const auto job = Job(std::string(kJobHead) +
                       "    Coordinator:\n"
                       "      template: {spec: {terminationGracePeriodSeconds: 5, containers: "
                       "[{name: c, command: [sh, -c], args: ['echo $(TJ_REPLICA_NAME)'], env: "
                       "[{name: TJ_JOB_NAME, value: mine}, {name: A, value: x}]}]}}\n"
                       "    PS:\n"
                       "      template: {spec: {terminationGracePeriodSeconds: 600, containers: "
                       "[{name: c, command: [/bin/sleep, '1']}]}}\n"
                       "    Worker:\n"
                       "      replicas: 2\n"
                       "      template: {spec: {containers: [{name: c, command: [/bin/true]}, "
                       "{name: sidecar, command: [/bin/true]}]}}\n");
  const ReplicaAddresses addresses = PickLocalAddresses(job);
  const LaunchPlan plan = PlanLocalLaunch(job, addresses, Paths());
  ASSERT_TRUE(plan.ok()) << plan.errors[0].field << ": " << plan.errors[0].message;
  ASSERT_EQ(plan.replicas.size(), 4u);
  const ReplicaLaunch& coordinator = plan.replicas[0];
  EXPECT_EQ(coordinator.name, "j-coordinator-0");
  EXPECT_THAT(coordinator.binary, ::testing::EndsWith("/sh"));
  EXPECT_EQ(coordinator.args, (std::vector<std::string>{"-c", "echo j-coordinator-0"}));
  EXPECT_EQ(coordinator.log_path, "/w/logs/j-coordinator-0.log");
  EXPECT_EQ(coordinator.grace_period, absl::Seconds(5));
  EXPECT_EQ(coordinator.address, addresses.at({ReplicaType::kCoordinator, 0}));
  // The user's env first, ours replacing the user's value in place, then ours.
  EXPECT_EQ(coordinator.env[0], (std::pair<std::string, std::string>{"TJ_JOB_NAME", "j"}));
  EXPECT_EQ(coordinator.env[1], (std::pair<std::string, std::string>{"A", "x"}));
  EXPECT_THAT(coordinator.env, Contains(Pair("TJ_CHECKPOINT_DIR", "/w/checkpoints")));
  EXPECT_THAT(coordinator.env, Contains(Pair("TJ_PROGRESS_FILE", "/w/progress.json")));
  // Each replica gets its own role's credential, never the job's secret.
  EXPECT_THAT(coordinator.env, Contains(Pair("TJ_TOKEN_FILE", "/w/credentials/coordinator")));
  EXPECT_THAT(coordinator.env,
              Contains(Pair("TJ_TOKEN_VERIFIERS_FILE", "/w/credentials/verifiers")));
  EXPECT_THAT(plan.replicas[1].env, Contains(Pair("TJ_TOKEN_FILE", "/w/credentials/ps")));
  EXPECT_THAT(coordinator.env, Contains(Pair("TF_CONFIG", HasSubstr("\"chief\""))));
  EXPECT_EQ(plan.replicas[1].grace_period, kMaxLocalGracePeriod);  // 600 s capped
  EXPECT_EQ(plan.replicas[2].grace_period, kMaxLocalGracePeriod);  // default
  ASSERT_EQ(plan.warnings.size(), 1u);
  EXPECT_THAT(plan.warnings[0], HasSubstr("spec.replicaSpecs.Worker.template.spec.containers"));
}

// A TensorFlow chief's Coordination service (tj-coordination port) gets its own local port.
TEST(LaunchPlanTest, DeclaredCoordinationPortGetsASecondLocalPort) {
  const auto job = Job(std::string(kJobHead) +
                       "    Coordinator:\n"
                       "      template: {spec: {containers: [{name: c, command: [/bin/true], "
                       "ports: [{name: tj-coordination, containerPort: 2223}]}]}}\n"
                       "    PS:\n"
                       "      template: {spec: {containers: [{name: c, command: [/bin/true]}]}}\n"
                       "    Worker:\n"
                       "      template: {spec: {containers: [{name: c, command: [/bin/true]}]}}\n");
  const LaunchPlan plan = PlanLocalLaunch(job, PickLocalAddresses(job), Paths());
  ASSERT_TRUE(plan.ok()) << plan.errors[0].field << ": " << plan.errors[0].message;
  const ReplicaLaunch& coordinator = plan.replicas[0];
  EXPECT_THAT(coordinator.coordination_address, ::testing::StartsWith("127.0.0.1:"));
  EXPECT_NE(coordinator.coordination_address, coordinator.address);
  EXPECT_THAT(coordinator.env,
              Contains(Pair("TJ_COORDINATION_ADDRESS", coordinator.coordination_address)));
  EXPECT_EQ(plan.replicas[1].coordination_address, "");
  EXPECT_THAT(plan.replicas[1].env, Not(Contains(Pair("TJ_COORDINATION_ADDRESS", _))));
}

TEST(LaunchPlanTest, EveryProblemWithItsFieldPathOncePerReplicaType) {
  const auto job = Job(std::string(kJobHead) +
                       "    Coordinator:\n"
                       "      template: {spec: {containers: [{name: c, command: [no-such-tj-binary]}]}}\n"
                       "    PS:\n"
                       "      template: {spec: {containers: [{name: c, command: [/no/such/file], env: "
                       "[{name: T, valueFrom: {configMapKeyRef: {name: m, key: k}}}]}]}}\n"
                       "    Worker:\n"
                       "      replicas: 3\n"
                       "      template: {spec: {containers: [{name: c, command: [/bin/true], env: "
                       "[{name: T, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}]}]}}\n");
  const LaunchPlan plan = PlanLocalLaunch(job, PickLocalAddresses(job), Paths());
  std::vector<std::string> fields;
  for (const auto& e : plan.errors) fields.push_back(e.field);
  EXPECT_EQ(fields, (std::vector<std::string>{
                        "spec.replicaSpecs.Coordinator.template.spec.containers[0].command[0]",
                        "spec.replicaSpecs.PS.template.spec.containers[0].env[0].valueFrom."
                        "configMapKeyRef",
                        "spec.replicaSpecs.PS.template.spec.containers[0].command[0]",
                        "spec.replicaSpecs.Worker.template.spec.containers[0].env[0].valueFrom."
                        "fieldRef.fieldPath"}));
  EXPECT_THAT(plan.errors[0].message, HasSubstr("not found in $TJ_BIN_DIR, next to tjctl or on $PATH"));
}

TEST(LaunchPlanTest, ASuspendedJobIsRefused) {
  const auto job = Job(std::string(kJobHead) +
                       "    Coordinator: {template: {spec: {containers: [{name: c, command: [/bin/true]}]}}}\n"
                       "    PS: {template: {spec: {containers: [{name: c, command: [/bin/true]}]}}}\n"
                       "    Worker: {template: {spec: {containers: [{name: c, command: [/bin/true]}]}}}\n"
                       "  runPolicy: {suspend: true}\n");
  const LaunchPlan plan = PlanLocalLaunch(job, PickLocalAddresses(job), Paths());
  ASSERT_EQ(plan.errors.size(), 1u);
  EXPECT_EQ(plan.errors[0].field, "spec.runPolicy.suspend");
}

// --metrics-targets: each replica its own TJ_METRICS_ADDRESS (over the template's), listed for
// Prometheus' file_sd with the labels the chart's PodMonitor gives pods on Kubernetes.
TEST(LaunchPlanTest, MetricsTargetsGiveEachReplicaItsOwnAddressListedForPrometheus) {
  const auto job =
      Job(std::string(kJobHead) +
          "    Coordinator: {template: {spec: {containers: [{name: c, command: "
          "[/bin/true], env: [{name: TJ_METRICS_ADDRESS, value: ':9090'}]}]}}}\n"
          "    PS: {template: {spec: {containers: [{name: c, command: [/bin/true]}]}}}\n"
          "    Worker:\n      replicas: 2\n"
          "      template: {spec: {containers: [{name: c, command: [/bin/true]}]}}\n");
  const ReplicaAddresses addresses = PickLocalAddresses(job);
  const ReplicaAddresses metrics = PickLocalAddresses(job, addresses);
  ASSERT_EQ(metrics.size(), 4u);
  const LaunchPlan plan = PlanLocalLaunch(job, addresses, Paths(), metrics);
  ASSERT_TRUE(plan.ok());
  std::set<std::string> distinct;
  for (const auto& [key, address] : addresses) distinct.insert(address);
  for (const ReplicaLaunch& launch : plan.replicas) {
    EXPECT_THAT(launch.env, Contains(Pair("TJ_METRICS_ADDRESS", metrics.at(launch.key))))
        << launch.name;
    EXPECT_NE(metrics.at(launch.key), launch.address) << "the trainer port is another";
    distinct.insert(metrics.at(launch.key));
  }
  EXPECT_EQ(distinct.size(), 8u) << "processes of one host need a port each, trainer ports too";

  const nlohmann::json targets = nlohmann::json::parse(PrometheusTargetsJson(job, metrics));
  ASSERT_EQ(targets.size(), 4u);
  EXPECT_EQ(
      targets[3],
      nlohmann::json({{"targets", nlohmann::json::array({metrics.at({ReplicaType::kWorker, 1})})},
                      {"labels",
                       {{"namespace", "default"},
                        {"trainingjob", "j"},
                        {"replica_type", "worker"},
                        {"replica_index", "1"},
                        {"pod", "j-worker-1"}}}}));
  // Without the option nothing changes: the template's own variable stays.
  const LaunchPlan plain = PlanLocalLaunch(job, PickLocalAddresses(job), Paths());
  EXPECT_THAT(plain.replicas[0].env, Contains(Pair("TJ_METRICS_ADDRESS", ":9090")));
  EXPECT_THAT(plain.replicas[1].env,
              ::testing::Not(Contains(Pair("TJ_METRICS_ADDRESS", ::testing::_))));
}

TEST(ShellQuoteTest, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(ShellQuoteCommand("/bin/sh", {"-c", "echo 'hi' $X", "a=b", ""}),
            "/bin/sh -c 'echo '\\''hi'\\'' $X' a=b ''");
}

TEST(StatusLineTest, ShowsStateStepBarLossThroughputMetricsRestartsElapsed) {
  v1alpha1::TrainingProgress p;
  p.state = "training";
  p.step = 1200;
  p.total_steps = 2000;
  p.loss = 0.341234;
  p.examples_per_second = 1234.4;
  p.metrics = {{"accuracy", 0.912}, {"auc", 0.95}};
  EXPECT_EQ(FormatStatusLine({"Running", p, 1, absl::Seconds(62)}),
            "Running | training 1200/2000 [############........] 60% | loss 0.3412 | 1234 ex/s | "
            "accuracy 0.912 auc 0.95 | restarts 1 | 1m02s");
  EXPECT_EQ(FormatStatusLine({"Running", p, 1, absl::Seconds(62)}, true, 0),
            "Running | training 1200/2000 [############........] 60% | loss 0.3412 | restarts 1 | "
            "1m02s");
  EXPECT_EQ(FormatStatusLine({"Created", std::nullopt, 0, absl::Seconds(3)}, false),
            "Created | no progress reported yet | restarts 0");
  EXPECT_EQ(FormatElapsed(absl::Seconds(3723)), "1h02m03s");
}

// The final line's goodput: the share and the causes that lost time (a tenth of a second or more);
// none when no time has passed (never "nan%").
TEST(StatusLineTest, TheFinalLineShowsGoodputAndTimeLostByCause) {
  v1alpha1::TrainingProgress p;
  p.state = "succeeded";
  p.step = 2000;
  v1alpha1::TimeSplit split{.wall = 100, .productive = 91.25, .lost = {}};
  split.lost_by(v1alpha1::LostCause::kStartup) = 2;
  split.lost_by(v1alpha1::LostCause::kRestart) = 6.73;
  split.lost_by(v1alpha1::LostCause::kWorkerRerun) = 0.02;
  DisplaySnapshot snapshot{"Succeeded", p, 1, absl::Seconds(100)};
  snapshot.goodput = split;
  EXPECT_EQ(FormatStatusLine(snapshot, false),
            "Succeeded | succeeded 2000 | restarts 1 | goodput 91.2% (lost 2.0s startup, 6.7s "
            "restart)");
  snapshot.goodput = v1alpha1::TimeSplit{};
  EXPECT_EQ(FormatStatusLine(snapshot, false), "Succeeded | succeeded 2000 | restarts 1");
}

TEST(ProgressDisplayTest, PlainOutputPrintsChangesAtMostEveryInterval) {
  testing::TempDir dir;
  const std::string path = dir.Join("out.txt");
  std::FILE* out = std::fopen(path.c_str(), "w");
  ASSERT_NE(out, nullptr);
  ProgressDisplay display(DisplayMode::kPlain, out, absl::Hours(1));
  display.Update({"Running", std::nullopt, 0, absl::Seconds(1)});
  display.Update({"Running", std::nullopt, 0, absl::Seconds(2)});    // unchanged
  display.Update({"Restarting", std::nullopt, 1, absl::Seconds(3)});  // too soon
  display.Event(absl::Seconds(4), "started x");
  display.Result("done");
  std::fclose(out);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text,
            "[    1.0s] Running | no progress reported yet | restarts 0\n"
            "[    4.0s] started x\n"
            "done\n");
}

TEST(ProgressFileTest, MissingPartialOrInvalidReadAsNothing) {
  testing::TempDir dir;
  const std::string path = dir.Join("progress.json");
  EXPECT_FALSE(ReadProgressFile(path).has_value());
  std::ofstream(path) << R"({"state":"training","step":12,"tot)";
  EXPECT_FALSE(ReadProgressFile(path).has_value());
  std::ofstream(path, std::ios::trunc) << R"({"state":"training","step":"12"})";
  EXPECT_FALSE(ReadProgressFile(path).has_value());
  std::ofstream(path, std::ios::trunc) << R"({"state":"training","step":12,"totalSteps":20})";
  auto progress = ReadProgressFile(path);
  ASSERT_TRUE(progress.has_value());
  EXPECT_EQ(progress->step, 12);
  EXPECT_EQ(progress->total_steps, 20);
}

TEST(StatusFileTest, JsonShapeAndAtomicWrite) {
  RunStatus status;
  status.job = "j";
  status.phase = "Running";
  status.reason = "Running";
  status.restart_count = 2;
  status.start_time = absl::FromUnixSeconds(1714564800);
  status.work_dir = "/w";
  ReplicaRunStatus r;
  r.name = "j-worker-0";
  r.type = "Worker";
  r.address = "127.0.0.1:1";
  r.state = "Running";
  r.starts = 3;
  r.last_exit_code = 137;
  r.last_signal = 9;
  r.pid = 42;
  r.log = "/w/logs/j-worker-0.log";
  status.replicas.push_back(r);
  const nlohmann::json json = ToJson(status);
  EXPECT_EQ(json["startTime"], "2024-05-01T12:00:00Z");
  EXPECT_TRUE(json["completionTime"].is_null());
  EXPECT_TRUE(json["progress"].is_null());
  EXPECT_TRUE(json["checkpointDir"].is_null());
  EXPECT_EQ(json["restartCount"], 2);
  EXPECT_EQ(json["replicas"]["j-worker-0"],
            (nlohmann::json{{"type", "Worker"}, {"index", 0}, {"address", "127.0.0.1:1"},
                            {"state", "Running"}, {"starts", 3}, {"lastExitCode", 137},
                            {"lastSignal", 9}, {"pid", 42}, {"log", "/w/logs/j-worker-0.log"}}));

  testing::TempDir dir;
  const std::string path = dir.Join("status.json");
  ASSERT_TRUE(WriteFileAtomically(path, json.dump()).ok());
  ASSERT_TRUE(WriteFileAtomically(path, json.dump()).ok());
  std::ifstream in(path);
  EXPECT_EQ(nlohmann::json::parse(in), json);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1) << "no temporary file left beside status.json";
}

TEST(ReplicaLogTest, HeadersAndTail) {
  testing::TempDir dir;
  const std::string path = dir.Join("r.log");
  AppendStartHeader(path, absl::FromUnixSeconds(1714564800), 2, "/bin/x --y");
  for (int i = 0; i < 12; ++i) std::ofstream(path, std::ios::app) << "line " << i << "\n";
  const auto lines = LastLines(path, 3);
  EXPECT_EQ(lines, (std::vector<std::string>{"line 9", "line 10", "line 11"}));
  EXPECT_EQ(LastLines(path, 100).front(), "=== 2024-05-01T12:00:00Z start #2: /bin/x --y");
  EXPECT_TRUE(LastLines(dir.Join("missing"), 3).empty());
}

}  // namespace
}  // namespace tj::local
