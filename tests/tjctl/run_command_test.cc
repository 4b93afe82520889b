// `tjctl run` end to end: the real tjctl binary runs jobs whose replicas are small shell scripts.
// One script plays every replica: it records its pid, its start and its environment in the test's
// directory, writes progress when it is the coordinator, then does what the file
// exits-<Type>[-<index>] says for its n-th start (line n, or the last line): exit with a code,
// "sleep" (run until stopped; the default), "finish" (exit 0 once the test creates the file
// "finish"), or "stubborn" (ignore SIGTERM). Its env file, written last, tells the test it has
// started. The tests wait on conditions (files, status.json, /proc), never on fixed sleeps.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "coordinator/base/job_roles.h"
#include "nlohmann/json.hpp"
#include "tests/support/temp_dir.h"
#include "tests/support/wait_for.h"
#include "tjctl/local/process.h"

namespace tj {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kReplicaScript[] = R"sh(#!/bin/sh
D="$(dirname "$0")"
echo $$ >> "$D/pids"
echo start >> "$D/starts-$TJ_REPLICA_NAME"
n=$(wc -l < "$D/starts-$TJ_REPLICA_NAME")
f="$D/exits-$TJ_REPLICA_TYPE-$TJ_REPLICA_INDEX"; [ -f "$f" ] || f="$D/exits-$TJ_REPLICA_TYPE"
action=sleep
if [ -f "$f" ]; then action=$(sed -n "${n}p" "$f"); [ -n "$action" ] || action=$(tail -n 1 "$f"); fi
if [ "$TJ_REPLICA_TYPE" = Coordinator ]; then
  printf '{"state":"training","step":%d,"totalSteps":100,"loss":0.25,"metrics":{"accuracy":0.5}}' \
    $((n * 10)) > "$TJ_PROGRESS_FILE.tmp" && mv "$TJ_PROGRESS_FILE.tmp" "$TJ_PROGRESS_FILE"
fi
echo "$TJ_REPLICA_NAME start $n: $action"
[ "$action" = stubborn ] && trap '' TERM  # before it says it has started
env > "$D/env-$TJ_REPLICA_NAME.tmp" && mv "$D/env-$TJ_REPLICA_NAME.tmp" "$D/env-$TJ_REPLICA_NAME"
case "$action" in
  sleep) exec sleep 600 ;;
  stubborn) exec sleep 600 ;;  # SIGTERM stays ignored across exec
  finish) while [ ! -f "$D/finish" ]; do sleep 0.01; done; exit 0 ;;
  *) exit "$action" ;;
esac
)sh";

struct Result {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

class RunCommandTest : public ::testing::Test {
 protected:
  RunCommandTest() : work_dir_(dir_.Join("work")), script_(dir_.Join("replica.sh")) {
    std::ofstream(script_) << kReplicaScript;
    fs::permissions(script_, fs::perms::owner_all);
  }

  // A job named "job" whose three replica types run the replica script; `spec_extra` is appended
  // under spec (two spaces of indentation), `container_extra` inside every container.
  std::string WriteManifest(const std::string& spec_extra = "", int workers = 2,
                            const std::string& container_extra = "",
                            const std::string& template_extra = "") {
    auto replica = [&](const std::string& type, int replicas) {
      return absl::StrCat("    ", type, ":\n      replicas: ", replicas,
                          "\n      template: {spec: {", template_extra,
                          "containers: [{name: main, command: [/bin/sh, ", script_, "]",
                          container_extra, "}]}}\n");
    };
    const std::string path = dir_.Join("job.yaml");
    std::ofstream(path) << "apiVersion: trainingjob.dev/v1alpha1\nkind: TrainingJob\n"
                        << "metadata: {name: job}\nspec:\n  replicaSpecs:\n"
                        << replica("Coordinator", 1) << replica("PS", 1)
                        << replica("Worker", workers) << spec_extra;
    return path;
  }

  void SetActions(const std::string& replica, const std::string& actions) {
    std::ofstream(dir_.Join("exits-" + replica)) << actions << "\n";
  }

  local::ChildProcess StartTjctl(const std::string& manifest, std::vector<std::string> extra = {},
                                 std::map<std::string, std::string> env = {}) {
    std::vector<std::string> args = {"run", manifest, "--work-dir", work_dir_};
    args.insert(args.end(), extra.begin(), extra.end());
    auto process = local::ChildProcess::Start(
        local::ProcessSpec{TJCTL_BINARY, args, std::move(env), dir_.Join("tjctl.out"), {}});
    EXPECT_TRUE(process.ok()) << process.status();
    return *std::move(process);
  }

  Result Finish(local::ChildProcess& tjctl) {
    Result result;
    auto exit = tjctl.WaitForExit(absl::Seconds(120));
    if (!exit) {
      ADD_FAILURE() << "tjctl did not finish";
      tjctl.KillAndWait(SIGKILL);
    } else {
      result.exit_code = exit->signal != 0 ? -exit->signal : exit->exit_code;
    }
    result.output = ReadFile(dir_.Join("tjctl.out"));
    return result;
  }

  Result Run(const std::string& manifest, std::vector<std::string> extra = {},
             std::map<std::string, std::string> env = {}) {
    local::ChildProcess tjctl = StartTjctl(manifest, std::move(extra), std::move(env));
    return Finish(tjctl);
  }

  static std::string ReadFile(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  nlohmann::json Status() const {
    return nlohmann::json::parse(ReadFile(work_dir_ + "/status.json"), nullptr, false);
  }

  int Starts(const std::string& replica) const {
    std::ifstream in(dir_.Join("starts-" + replica));
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }

  // Every replica has started (the pids and env files are written by then).
  bool AllStarted(int replicas) const {
    int started = 0;
    for (const auto& entry : fs::directory_iterator(dir_.path())) {
      started += entry.path().filename().string().rfind("env-", 0) == 0 &&
                 entry.path().extension() != ".tmp";
    }
    return started == replicas;
  }

  std::map<std::string, std::string> Env(const std::string& replica) const {
    std::map<std::string, std::string> env;
    std::ifstream in(dir_.Join("env-" + replica));
    for (std::string line; std::getline(in, line);) {
      const size_t eq = line.find('=');
      if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return env;
  }

  std::vector<pid_t> RecordedPids() const {
    std::vector<pid_t> pids;
    std::ifstream in(dir_.Join("pids"));
    for (pid_t pid; in >> pid;) pids.push_back(pid);
    return pids;
  }

  // Gone, or a zombie waiting for a reaper that is not tjctl (after tjctl itself was killed).
  static bool Gone(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string field_pid, comm, state;
    if (!(stat >> field_pid >> comm >> state)) return true;
    return state == "Z" || state == "X";
  }

  void ExpectNoReplicaLeft() {
    const std::vector<pid_t> pids = RecordedPids();
    EXPECT_FALSE(pids.empty());
    for (pid_t pid : pids) {
      EXPECT_TRUE(testing::WaitFor([&] { return Gone(pid); }, absl::Seconds(10)))
          << "replica process " << pid << " outlived tjctl";
    }
  }

  testing::TempDir dir_;
  const std::string work_dir_;
  const std::string script_;
};

TEST_F(RunCommandTest, SucceedsWhenTheCoordinatorExitsZeroAndLeavesNoProcess) {
  SetActions("Coordinator", "finish");
  const std::string manifest = WriteManifest();
  local::ChildProcess tjctl = StartTjctl(manifest, {}, {{"TJ_CHECKPOINT_DIR", "/leaked"}});
  ASSERT_TRUE(testing::WaitFor([&] { return AllStarted(4); }));
  std::ofstream(dir_.Join("finish")) << "";
  const Result r = Finish(tjctl);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("job job Succeeded"));
  EXPECT_THAT(r.output, HasSubstr("work dir: " + work_dir_));
  const nlohmann::json status = Status();
  EXPECT_EQ(status["phase"], "Succeeded");
  EXPECT_EQ(status["reason"], "Succeeded");
  EXPECT_EQ(status["restartCount"], 0);
  EXPECT_EQ(status["job"], "job");
  EXPECT_EQ(status["workDir"], work_dir_);
  EXPECT_TRUE(status["completionTime"].is_string());
  EXPECT_EQ(status["progress"]["step"], 10);
  EXPECT_EQ(status["progress"]["metrics"]["accuracy"], 0.5);
  EXPECT_EQ(status["replicas"]["job-coordinator-0"]["lastExitCode"], 0);
  EXPECT_EQ(status["replicas"]["job-ps-0"]["state"], "Stopped");  // cleanPodPolicy Running
  EXPECT_EQ(status["replicas"]["job-worker-1"]["state"], "Stopped");
  EXPECT_EQ(RecordedPids().size(), 4u);
  ExpectNoReplicaLeft();
  // The log: a header line before the start, then the program's output.
  const std::string log = ReadFile(work_dir_ + "/logs/job-worker-0.log");
  EXPECT_THAT(log, ::testing::ContainsRegex("^=== [0-9TZ:-]+ start #1: /bin/sh " + script_ + "\n"
                                            "job-worker-0 start 1: sleep\n"));
  // A job without spec.checkpoint gets no checkpoint variables, not even tjctl's own.
  EXPECT_EQ(Env("job-coordinator-0").count("TJ_CHECKPOINT_DIR"), 0u);
  EXPECT_FALSE(fs::exists(work_dir_ + "/checkpoints"));
}

TEST_F(RunCommandTest, ACoordinatorRestartExitCodeRestartsItAndCounts) {
  SetActions("Coordinator", "42\n0");
  const Result r = Run(WriteManifest());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("restarting job-coordinator-0 in 0s (RestartExitCode, restart 1 "
                                  "of backoffLimit 6)"));
  const nlohmann::json status = Status();
  EXPECT_EQ(status["phase"], "Succeeded");
  EXPECT_EQ(status["restartCount"], 1);
  EXPECT_EQ(status["replicas"]["job-coordinator-0"]["starts"], 2);
  EXPECT_EQ(status["replicas"]["job-ps-0"]["starts"], 1);
  EXPECT_EQ(status["progress"]["step"], 20);  // the second run's report
  const std::string log = ReadFile(work_dir_ + "/logs/job-coordinator-0.log");
  EXPECT_THAT(log, HasSubstr("start #1: "));
  EXPECT_THAT(log, HasSubstr("exited with code 42"));
  EXPECT_THAT(log, HasSubstr("start #2: "));
  ExpectNoReplicaLeft();
}

TEST_F(RunCommandTest, APermanentExitCodeFailsTheJobAndStopsTheOthers) {
  SetActions("Worker-1", "1");
  const Result r = Run(WriteManifest());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("job job Failed (PermanentExitCode)"));
  EXPECT_THAT(r.output, HasSubstr("worker 1 exited with code 1"));
  // The tail of the failing replica's log.
  EXPECT_THAT(r.output, HasSubstr("--- last 3 lines of " + work_dir_ + "/logs/job-worker-1.log"));
  EXPECT_THAT(r.output, HasSubstr("job-worker-1 start 1: 1\n"));
  const nlohmann::json status = Status();
  EXPECT_EQ(status["phase"], "Failed");
  EXPECT_EQ(status["reason"], "PermanentExitCode");
  EXPECT_EQ(status["replicas"]["job-worker-1"]["state"], "Exited");
  EXPECT_EQ(status["replicas"]["job-worker-1"]["lastExitCode"], 1);
  for (const char* stopped : {"job-coordinator-0", "job-ps-0", "job-worker-0"}) {
    EXPECT_EQ(status["replicas"][stopped]["state"], "Stopped") << stopped;
    EXPECT_EQ(status["replicas"][stopped]["lastSignal"], SIGTERM) << stopped;
  }
  ExpectNoReplicaLeft();
}

TEST_F(RunCommandTest, BackoffLimitExceeded) {
  SetActions("Coordinator", "42");
  const Result r = Run(WriteManifest("  runPolicy: {backoffLimit: 1}\n"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const nlohmann::json status = Status();
  EXPECT_EQ(status["phase"], "Failed");
  EXPECT_EQ(status["reason"], "BackoffLimitExceeded");
  EXPECT_THAT(status["message"].get<std::string>(), HasSubstr("backoffLimit 1 reached"));
  EXPECT_EQ(status["restartCount"], 1);
  EXPECT_EQ(Starts("job-coordinator-0"), 2);
  ExpectNoReplicaLeft();
}

// A failurePolicy FailJob rule on a worker's exit code: the job fails at once, naming the rule,
// where restartExitCodes alone would have restarted the worker (42 is the restart code).
TEST_F(RunCommandTest, AFailJobRuleFailsTheJobAtOnceNamingTheRule) {
  SetActions("Worker-1", "42");
  const Result r = Run(WriteManifest(
      "  failurePolicy:\n    rules:\n"
      "    - {action: Ignore, onPodConditions: [DisruptionTarget]}\n"
      "    - {action: FailJob, replicaTypes: [Worker], onExitCodes: {operator: In, "
      "values: [42]}}\n"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("job job Failed (FailurePolicyFailJob)"));
  const nlohmann::json status = Status();
  EXPECT_EQ(status["phase"], "Failed");
  EXPECT_EQ(status["reason"], "FailurePolicyFailJob");
  EXPECT_EQ(status["message"], "worker 1 exited with code 42, which matches "
                               "spec.failurePolicy.rules[1] (action FailJob)");
  EXPECT_EQ(status["restartCount"], 0);
  EXPECT_EQ(Starts("job-worker-1"), 1);
  ExpectNoReplicaLeft();
}

// A failurePolicy RestartJob rule: worker 1's exit stops every other replica (not failures: none
// is judged or counted) and starts them all again; the job's restart counts once, and the second
// coordinator finishes the job.
TEST_F(RunCommandTest, ARestartJobRuleRestartsEveryReplicaCountedOnce) {
  SetActions("Worker-1", "7\nsleep");
  SetActions("Coordinator", "sleep\n0");
  const Result r = Run(WriteManifest(
      "  failurePolicy:\n    rules:\n"
      "    - {action: RestartJob, replicaTypes: [Worker], onExitCodes: {operator: In, "
      "values: [7]}}\n"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("job Restarting (FailurePolicyRestartJob): worker 1 exited with "
                                  "code 7; spec.failurePolicy.rules[0] (action RestartJob)"));
  EXPECT_THAT(r.output, HasSubstr("restarting job-worker-1 in 0s (FailurePolicyRestartJob, "
                                  "restart 1 of backoffLimit 6)"));
  const nlohmann::json status = Status();
  EXPECT_EQ(status["phase"], "Succeeded");
  EXPECT_EQ(status["restartCount"], 1) << "the stopped replicas' exits are not failures";
  for (const char* replica : {"job-coordinator-0", "job-ps-0", "job-worker-0", "job-worker-1"}) {
    EXPECT_EQ(status["replicas"][replica]["starts"], 2) << replica;
  }
  EXPECT_EQ(status["progress"]["step"], 20);  // the second coordinator's report
  ExpectNoReplicaLeft();
}

TEST_F(RunCommandTest, AWorkerKilledWithSigkillIsRestarted) {
  SetActions("Coordinator", "finish");
  local::ChildProcess tjctl = StartTjctl(WriteManifest());
  pid_t worker = 0;
  ASSERT_TRUE(testing::WaitFor([&] {
    const nlohmann::json status = Status();
    if (status.is_discarded() || !status["replicas"]["job-worker-0"]["pid"].is_number()) {
      return false;
    }
    worker = status["replicas"]["job-worker-0"]["pid"].get<pid_t>();
    return true;
  }));
  ASSERT_TRUE(testing::WaitFor([&] { return Starts("job-worker-0") == 1; }));
  kill(worker, SIGKILL);
  ASSERT_TRUE(testing::WaitFor([&] { return Starts("job-worker-0") == 2; }));
  std::ofstream(dir_.Join("finish")) << "";
  const Result r = Finish(tjctl);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("job-worker-0 was killed by SIGKILL (exit code 137)"));
  EXPECT_THAT(r.output, HasSubstr("restarting job-worker-0 in 0s (Signal"));
  const nlohmann::json status = Status();
  EXPECT_EQ(status["restartCount"], 1);
  EXPECT_EQ(status["replicas"]["job-worker-0"]["starts"], 2);
  EXPECT_EQ(status["replicas"]["job-worker-1"]["starts"], 1);
  ExpectNoReplicaLeft();
}

// While a replica waits out its backoff, decisions go on (every 200 ms) and must not count its
// exit again: three exits, three counted restarts, whatever the number of decisions in between.
TEST_F(RunCommandTest, RestartsBackOffAndEachExitCountsOnce) {
  SetActions("Coordinator", "finish");
  SetActions("Worker-0", "42\n42\n42\nsleep");
  local::ChildProcess tjctl = StartTjctl(WriteManifest());
  ASSERT_TRUE(testing::WaitFor([&] { return Starts("job-worker-0") == 4; }));
  ASSERT_TRUE(testing::WaitFor([&] {
    const nlohmann::json status = Status();
    return !status.is_discarded() && status["replicas"]["job-worker-0"]["state"] == "Running";
  }));
  std::ofstream(dir_.Join("finish")) << "";
  const Result r = Finish(tjctl);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("restarting job-worker-0 in 0s (RestartExitCode, restart 1 of"));
  EXPECT_THAT(r.output, HasSubstr("restarting job-worker-0 in 500ms (RestartExitCode, restart 2 of"));
  EXPECT_THAT(r.output, HasSubstr("restarting job-worker-0 in 1s (RestartExitCode, restart 3 of"));
  EXPECT_EQ(Status()["restartCount"], 3);
  EXPECT_EQ(Status()["replicas"]["job-worker-0"]["starts"], 4);
  ExpectNoReplicaLeft();
}

TEST_F(RunCommandTest, ActiveDeadlineSecondsFailsTheJob) {
  const absl::Time start = absl::Now();
  const Result r = Run(WriteManifest("  runPolicy: {activeDeadlineSeconds: 1}\n"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_GE(absl::Now() - start, absl::Seconds(1));
  const nlohmann::json status = Status();
  EXPECT_EQ(status["phase"], "Failed");
  EXPECT_EQ(status["reason"], "DeadlineExceeded");
  EXPECT_THAT(r.output, HasSubstr("Failed (DeadlineExceeded)"));
  ExpectNoReplicaLeft();
}

TEST_F(RunCommandTest, SigintStopsEveryReplicaAndExits130) {
  local::ChildProcess tjctl = StartTjctl(WriteManifest());
  ASSERT_TRUE(testing::WaitFor([&] { return AllStarted(4); }));
  kill(tjctl.pid(), SIGINT);
  const Result r = Finish(tjctl);
  EXPECT_EQ(r.exit_code, 130) << r.output;
  EXPECT_THAT(r.output, HasSubstr("interrupted by SIGINT"));
  const nlohmann::json status = Status();
  EXPECT_EQ(status["reason"], "Interrupted");
  EXPECT_TRUE(status["completionTime"].is_string());
  for (const auto& [name, replica] : status["replicas"].items()) {
    EXPECT_EQ(replica["state"], "Stopped") << name;
  }
  ExpectNoReplicaLeft();
}

TEST_F(RunCommandTest, SigtermGivesTheGracePeriodThenKillsAReplicaThatIgnoresIt) {
  SetActions("PS", "stubborn");
  local::ChildProcess tjctl =
      StartTjctl(WriteManifest("", 1, "", "terminationGracePeriodSeconds: 1, "));
  ASSERT_TRUE(testing::WaitFor([&] { return AllStarted(3); }));
  const absl::Time signalled = absl::Now();
  kill(tjctl.pid(), SIGTERM);
  const Result r = Finish(tjctl);
  EXPECT_EQ(r.exit_code, 143) << r.output;
  EXPECT_GE(absl::Now() - signalled, absl::Seconds(1));
  EXPECT_THAT(r.output, HasSubstr("job-ps-0 did not exit within its grace period: SIGKILL"));
  EXPECT_EQ(Status()["replicas"]["job-ps-0"]["lastSignal"], SIGKILL);
  ExpectNoReplicaLeft();
}

TEST_F(RunCommandTest, ASecondSignalKillsAtOnce) {
  SetActions("PS", "stubborn");  // would take the whole default grace period of 30 s
  local::ChildProcess tjctl = StartTjctl(WriteManifest("", 1));
  ASSERT_TRUE(testing::WaitFor([&] { return AllStarted(3); }));
  const absl::Time signalled = absl::Now();
  kill(tjctl.pid(), SIGINT);
  ASSERT_TRUE(testing::WaitFor(
      [&] { return ReadFile(dir_.Join("tjctl.out")).find("stopping ") != std::string::npos; }));
  kill(tjctl.pid(), SIGINT);
  const Result r = Finish(tjctl);
  EXPECT_EQ(r.exit_code, 130) << r.output;
  EXPECT_LT(absl::Now() - signalled, absl::Seconds(20));
  EXPECT_THAT(r.output, HasSubstr("received SIGINT: killing every replica now"));
  EXPECT_EQ(Status()["replicas"]["job-ps-0"]["lastSignal"], SIGKILL);
  ExpectNoReplicaLeft();
}

TEST_F(RunCommandTest, ReplicasDieWithAKilledTjctl) {
  local::ChildProcess tjctl = StartTjctl(WriteManifest());
  ASSERT_TRUE(testing::WaitFor([&] { return AllStarted(4); }));
  tjctl.KillAndWait(SIGKILL);
  ExpectNoReplicaLeft();
}

TEST_F(RunCommandTest, AnInvalidManifestStartsNothingAndExits2) {
  const std::string manifest = WriteManifest("  runPolicy: {backoffLimit: -1}\n", 0);
  const Result r = Run(manifest);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr(manifest + ": spec.replicaSpecs.Worker.replicas: Invalid value"));
  EXPECT_THAT(r.output, HasSubstr(manifest + ": spec.runPolicy.backoffLimit: Invalid value"));
  EXPECT_FALSE(fs::exists(dir_.Join("pids")));
  EXPECT_FALSE(fs::exists(work_dir_));
}

TEST_F(RunCommandTest, LocalProblemsAreReportedWithTheirFieldPathsBeforeAnythingStarts) {
  const std::string path = dir_.Join("local.yaml");
  std::ofstream(path) << "apiVersion: trainingjob.dev/v1alpha1\nkind: TrainingJob\n"
                         "metadata: {name: job}\nspec:\n  replicaSpecs:\n"
                         "    Coordinator: {template: {spec: {containers: [{name: c, command: [/bin/sh, "
                      << script_
                      << "]}]}}}\n"
                         "    PS: {template: {spec: {containers: [{name: c, command: [/bin/sh, "
                      << script_
                      << "], env: [{name: T, valueFrom: {secretKeyRef: {name: s, key: k}}}]}]}}}\n"
                         "    Worker: {template: {spec: {containers: [{name: c, command: "
                         "[tj-no-such-binary]}]}}}\n";
  const Result r = Run(path);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr(path + ": spec.replicaSpecs.PS.template.spec.containers[0].env[0]"
                                         ".valueFrom.secretKeyRef: Forbidden: "));
  EXPECT_THAT(r.output,
              HasSubstr(path + ": spec.replicaSpecs.Worker.template.spec.containers[0].command[0]: "
                               "Invalid value: \"tj-no-such-binary\""));
  EXPECT_FALSE(fs::exists(dir_.Join("pids")));
}

TEST_F(RunCommandTest, TheEnvironmentOfEveryReplica) {
  SetActions("Coordinator", "finish");
  const std::string env =
      ", env: [{name: GREETING, value: hello}, "
      "{name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}, "
      "{name: POD_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}, "
      "{name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}, "
      "{name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}, "
      "{name: WHO, value: '$(POD_NAME) of $(TJ_JOB_NAME)'}]";
  local::ChildProcess tjctl = StartTjctl(
      WriteManifest("  checkpoint: {dir: /cluster/ckpt, intervalSteps: 50}\n"
                    "  faultTolerance: {restartExitCodes: [75]}\n",
                    2, env),
      {}, {{"TJ_TOKEN", "inherited"}, {"TJ_TOKEN_FILE", "/inherited"}});
  ASSERT_TRUE(testing::WaitFor([&] { return AllStarted(4); }));
  std::ofstream(dir_.Join("finish")) << "";
  const Result r = Finish(tjctl);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json status = Status();
  std::map<std::string, std::string> addresses;
  for (const auto& [name, replica] : status["replicas"].items()) {
    addresses[name] = replica["address"].get<std::string>();
    EXPECT_THAT(addresses[name], ::testing::MatchesRegex("127\\.0\\.0\\.1:[0-9]+"));
  }
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  for (const auto& [name, type, index] :
       std::vector<std::tuple<std::string, std::string, int>>{
           {"job-coordinator-0", "chief", 0}, {"job-ps-0", "ps", 0},
           {"job-worker-0", "worker", 0}, {"job-worker-1", "worker", 1}}) {
    SCOPED_TRACE(name);
    std::map<std::string, std::string> e = Env(name);
    const nlohmann::json tf_config = nlohmann::json::parse(e["TF_CONFIG"]);
    EXPECT_EQ(tf_config["cluster"]["chief"], nlohmann::json({addresses["job-coordinator-0"]}));
    EXPECT_EQ(tf_config["cluster"]["ps"], nlohmann::json({addresses["job-ps-0"]}));
    EXPECT_EQ(tf_config["cluster"]["worker"],
              nlohmann::json({addresses["job-worker-0"], addresses["job-worker-1"]}));
    EXPECT_EQ(tf_config["task"], (nlohmann::json{{"type", type}, {"index", index}}));
    EXPECT_EQ(e["TJ_JOB_NAME"], "job");
    EXPECT_EQ(e["TJ_JOB_NAMESPACE"], "default");
    EXPECT_EQ(e["TJ_REPLICA_NAME"], name);
    EXPECT_EQ(e["TJ_REPLICA_INDEX"], std::to_string(index));
    EXPECT_EQ(e["TJ_PROGRESS_FILE"], work_dir_ + "/progress.json");
    EXPECT_EQ(e["TJ_CHECKPOINT_DIR"], work_dir_ + "/checkpoints");  // not /cluster/ckpt
    EXPECT_EQ(e["TJ_CHECKPOINT_INTERVAL_STEPS"], "50");
    EXPECT_EQ(e["TJ_RESTART_EXIT_CODE"], "75");
    const std::string role = type == "chief" ? "coordinator" : type;
    EXPECT_EQ(e["TJ_TOKEN_FILE"], work_dir_ + "/credentials/" + role);
    EXPECT_EQ(e["TJ_TOKEN_VERIFIERS_FILE"], work_dir_ + "/credentials/verifiers");
    EXPECT_EQ(e.count("TJ_COORDINATOR_GENERATION"), role == "coordinator" ? 1u : 0u);
    EXPECT_EQ(e.count("TJ_TOKEN"), 0u);
    EXPECT_EQ(e["GREETING"], "hello");
    EXPECT_EQ(e["POD_NAME"], name);
    EXPECT_EQ(e["POD_NAMESPACE"], "default");
    EXPECT_EQ(e["POD_IP"], "127.0.0.1");
    EXPECT_EQ(e["NODE"], host);
    EXPECT_EQ(e["WHO"], name + " of job");
  }
  EXPECT_EQ(Env("job-ps-0")["TJ_REPLICA_TYPE"], "PS");
  // A fresh token per run, for the user's eyes only.
  EXPECT_THAT(ReadFile(work_dir_ + "/job-token"), ::testing::MatchesRegex("[0-9a-f]{64}"));
  EXPECT_EQ(fs::status(work_dir_ + "/job-token").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  // And the role credentials derived from it.
  EXPECT_EQ(ReadFile(work_dir_ + "/credentials/worker"),
            DeriveRoleCredential(ReadFile(work_dir_ + "/job-token"), JobRole::kWorker));
  EXPECT_EQ(fs::status(work_dir_ + "/credentials/control").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_TRUE(fs::is_directory(work_dir_ + "/checkpoints"));
  EXPECT_EQ(status["checkpointDir"], work_dir_ + "/checkpoints");
}

TEST_F(RunCommandTest, CheckpointDirAndStatusFileFlags) {
  const std::string checkpoints = dir_.Join("earlier-checkpoints");
  const std::string status_file = dir_.Join("elsewhere/status.json");
  SetActions("Coordinator", "0");
  const Result r = Run(WriteManifest("  checkpoint: {dir: /cluster/ckpt}\n"),
                       {"--checkpoint-dir", checkpoints, "--status-file", status_file, "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(Env("job-coordinator-0")["TJ_CHECKPOINT_DIR"], checkpoints);
  const nlohmann::json status = nlohmann::json::parse(ReadFile(status_file));
  EXPECT_EQ(status["phase"], "Succeeded");
  EXPECT_FALSE(fs::exists(work_dir_ + "/status.json"));
  // Quiet: only the result.
  EXPECT_THAT(r.output, ::testing::StartsWith("job job Succeeded"));
  EXPECT_THAT(r.output, Not(HasSubstr("started ")));
}

TEST_F(RunCommandTest, HelpDescribesTheCommand) {
  auto process = local::ChildProcess::Start(local::ProcessSpec{
      TJCTL_BINARY, {"run", "--help"}, {}, dir_.Join("help.out"), {}});
  ASSERT_TRUE(process.ok());
  auto exit = process->WaitForExit(absl::Seconds(30));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  const std::string help = ReadFile(dir_.Join("help.out"));
  for (const char* text : {"--work-dir", "--status-file", "--checkpoint-dir", "--quiet",
                           "Exit codes", "130 SIGINT"}) {
    EXPECT_THAT(help, HasSubstr(text));
  }
}

}  // namespace
}  // namespace tj
