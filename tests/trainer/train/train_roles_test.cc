// Roles and fencing with real tj-train processes: a job whose processes hold only their own role's
// credential trains; its parameter server refuses a worker's SaveShard and any shard path outside
// the checkpoint directory; its coordinator takes preemption notices from the control role and
// refuses a worker's; an older coordinator living on next to a newer one is fenced off, and the
// newer one's checkpoints stay intact.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "coordinator/base/coordinator_generation.h"
#include "coordinator/base/job_roles.h"
#include "coordinator/base/job_token.h"
#include "coordinator/base/values.h"
#include "coordinator/checkpoint/checkpoint_store.h"
#include "coordinator/coordination/coordination_client.h"
#include "coordinator/ps/ps_client.h"
#include "tests/trainer/test_files.h"
#include "tests/trainer/train/train_cluster.h"

namespace tj::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr int64_t kStepsPerEpoch = 45;
constexpr char kSecret[] = "roles-test-secret";

std::vector<std::string> DigitsArgs(int epochs, int step_sleep_ms) {
  return {"--model=softmax",
          "--data=" + train::testing::DigitsCsvPath(),
          "--epochs=" + std::to_string(epochs),
          "--batch-size=32",
          "--learning-rate=0.001",
          "--log-every-steps=10",
          "--step-sleep-ms=" + std::to_string(step_sleep_ms)};
}

class TrainRolesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (train::testing::DigitsCsvPath().empty()) {
      GTEST_SKIP() << "digits.csv.gz absent: apt-get install python3-sklearn";
    }
  }
  void TearDown() override {
    SetJobTokenForTesting(std::nullopt);
    SetJobVerifiersForTesting(std::nullopt);
    SetCoordinatorGenerationForTesting(0);
  }
  // This test process's calls carry `role`'s credential (channels made from now on).
  static void ActAs(JobRole role, uint64_t generation = 0) {
    SetJobTokenForTesting(DeriveRoleCredential(kSecret, role));
    SetCoordinatorGenerationForTesting(generation);
  }
};

TEST_F(TrainRolesTest, EachRoleIsHeldToItsRulesAndShardPathsStayInTheCheckpointDirectory) {
  TrainCluster cluster(1, 2);
  cluster.UseRoleCredentials(kSecret);
  cluster.StartServers();
  cluster.StartChief(DigitsArgs(1, 0));
  ASSERT_EQ(cluster.WaitForChief(), 0) << cluster.Log("chief");
  EXPECT_EQ(cluster.Progress()->step, kStepsPerEpoch) << "the job trains with role credentials";
  EXPECT_THAT(cluster.Log("ps-0"), HasSubstr("RPCs require a role credential"));
  const std::string inside = cluster.checkpoint_dir() + "/by-test.state";

  // A worker pulls and pushes, and may not create, save or restore.
  ActAs(JobRole::kCoordinator);
  auto coordinator = PsClient::Connect(cluster.ps_address(0), 0);
  ASSERT_TRUE(coordinator
                  ->CreateVariables({[] {
                    v1::VariableSpec spec;
                    spec.set_name("roles/v");
                    *spec.mutable_initial_value() = FloatTensor(std::vector<float>{1, 2}, {2});
                    return spec;
                  }()})
                  .ok());
  ActAs(JobRole::kWorker);
  auto worker = PsClient::Connect(cluster.ps_address(0), 0);
  ASSERT_TRUE(worker->Pull({"roles/v"}).ok());
  std::vector<v1::Tensor> delta;
  delta.push_back(FloatTensor(std::vector<float>{0.5, 0.5}, {2}));
  EXPECT_TRUE(worker->Push({"roles/v"}, std::move(delta)).ok());
  const absl::Status save = worker->SaveShard(inside).status();
  EXPECT_EQ(save.code(), absl::StatusCode::kPermissionDenied) << save;
  EXPECT_THAT(std::string(save.message()),
              AllOf(HasSubstr("role worker"), HasSubstr("tj.v1.ParameterServer/StreamSaveShard")));
  EXPECT_EQ(worker->RestoreShard(inside).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(worker->CreateVariables({}).code(), absl::StatusCode::kPermissionDenied);
  EXPECT_FALSE(std::filesystem::exists(inside));

  // The coordinator saves inside the checkpoint directory only.
  ASSERT_TRUE(coordinator->SaveShard(inside).ok());
  TempDir elsewhere;
  const std::string outside = elsewhere.Join("stolen.state");
  const absl::Status absolute = coordinator->SaveShard(outside).status();
  EXPECT_EQ(absolute.code(), absl::StatusCode::kPermissionDenied) << absolute;
  EXPECT_THAT(std::string(absolute.message()), HasSubstr(outside));
  EXPECT_FALSE(std::filesystem::exists(outside));
  const std::string dotdot = cluster.checkpoint_dir() + "/../escaped.state";
  const absl::Status climbing = coordinator->SaveShard(dotdot).status();
  EXPECT_EQ(climbing.code(), absl::StatusCode::kInvalidArgument) << climbing;
  EXPECT_THAT(std::string(climbing.message()), HasSubstr(dotdot));
  std::filesystem::create_directory_symlink(elsewhere.path(), cluster.checkpoint_dir() + "/link");
  const absl::Status linked =
      coordinator->SaveShard(cluster.checkpoint_dir() + "/link/stolen.state").status();
  EXPECT_EQ(linked.code(), absl::StatusCode::kPermissionDenied) << linked;
  EXPECT_FALSE(std::filesystem::exists(outside));
  const absl::Status restore = coordinator->RestoreShard("/etc/passwd").status();
  EXPECT_EQ(restore.code(), absl::StatusCode::kPermissionDenied) << restore;
  EXPECT_THAT(std::string(restore.message()), HasSubstr("/etc/passwd"));
  EXPECT_TRUE(coordinator->RestoreShard(inside).ok());

  // The control role (operator, tjctl) does not touch parameters.
  ActAs(JobRole::kControl);
  EXPECT_EQ(PsClient::Connect(cluster.ps_address(0), 0)->Pull({"roles/v"}).status().code(),
            absl::StatusCode::kPermissionDenied);
}

TEST_F(TrainRolesTest, PreemptionNoticesAboutTheCoordinatorComeFromTheControlRoleOnly) {
  TrainCluster cluster(1, 2);
  cluster.UseRoleCredentials(kSecret);
  cluster.StartServers();
  cluster.StartChief(DigitsArgs(6, 10));
  ASSERT_TRUE(cluster.WaitForStep(20)) << cluster.Log("chief");

  ActAs(JobRole::kWorker);
  const absl::Status refused =
      CoordinationClient(cluster.chief_address())
          .SendPreemptionNotice(MakeTaskId("chief", 0), "forged", absl::Now() + absl::Seconds(30))
          .status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied) << refused;
  EXPECT_THAT(std::string(refused.message()),
              AllOf(HasSubstr("role worker"), HasSubstr("PreemptionNotice")));
  ActAs(JobRole::kPs);
  EXPECT_EQ(CoordinationClient(cluster.chief_address())
                .Set("tj/progress", "{}", /*allow_overwrite=*/true)
                .code(),
            absl::StatusCode::kPermissionDenied)
      << "only the coordinator sets its progress";

  ActAs(JobRole::kControl);
  auto accepted = CoordinationClient(cluster.chief_address())
                      .SendPreemptionNotice(MakeTaskId("chief", 0), "EvictionByEvictionAPI",
                                            absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  EXPECT_TRUE(accepted->accepted()) << accepted->decision();
  EXPECT_EQ(cluster.WaitForChief(), 42) << cluster.Log("chief");
  EXPECT_THAT(cluster.Log("chief"), HasSubstr("notice for chief:0"));
  EXPECT_EQ(cluster.Checkpoints().size(), 1u) << "the accepted notice checkpointed";
}

// After a force-delete of a coordinator pod stuck on a lost node, its process may live on next to
// its successor. Here the first coordinator (generation 1) is frozen, a second (generation 2)
// takes over on another address, and the first is woken up again.
TEST_F(TrainRolesTest, AnOlderCoordinatorIsFencedOffAndTheNewerOnesCheckpointsStayIntact) {
  TrainCluster cluster(1, 2);
  cluster.UseRoleCredentials(kSecret);
  cluster.env()["TJ_CHECKPOINT_INTERVAL_STEPS"] = "20";
  cluster.StartServers();
  cluster.StartChiefAs("chief-1", DigitsArgs(4, 10),
                       {{"TJ_COORDINATOR_GENERATION", "1"},
                        // Once fenced off, it gives up on its workers soon.
                        {"TJ_WORKER_RECOVERY_TIMEOUT_SECONDS", "10"}},
                       cluster.chief_address());
  ASSERT_TRUE(cluster.WaitForStep(45)) << cluster.Log("chief-1");
  cluster.Signal("chief-1", SIGSTOP);
  const std::optional<int64_t> saved_by_first = cluster.Progress()->last_checkpoint_step;
  ASSERT_TRUE(saved_by_first.has_value());

  const std::string second_progress = cluster.progress_path() + ".2";
  auto second_step = [&]() -> int64_t {
    std::ifstream in(second_progress);
    const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    return json.is_object() ? json.value("step", int64_t{-1}) : -1;
  };
  cluster.StartChiefAs("chief-2", DigitsArgs(4, 10),
                       {{"TJ_COORDINATOR_GENERATION", "2"}, {"TJ_PROGRESS_FILE", second_progress}},
                       TrainCluster::FreeAddress());
  ASSERT_TRUE(WaitFor([&] { return second_step() >= *saved_by_first + 25; }, absl::Seconds(120)))
      << cluster.Log("chief-2");

  // A save of generation 1 is refused by the parameter server and by the checkpoint store.
  ActAs(JobRole::kCoordinator, /*generation=*/1);
  const absl::Status stale = PsClient::Connect(cluster.ps_address(0), 0)
                                 ->SaveShard(cluster.checkpoint_dir() + "/stale.state")
                                 .status();
  EXPECT_EQ(stale.code(), absl::StatusCode::kFailedPrecondition) << stale;
  EXPECT_THAT(std::string(stale.message()),
              AllOf(HasSubstr("generation 1"), HasSubstr("generation 2")));
  const absl::Status store_claim = CheckpointStore(cluster.checkpoint_dir(), 3, 1).Claim();
  EXPECT_EQ(store_claim.code(), absl::StatusCode::kFailedPrecondition) << store_claim;

  // The first coordinator wakes up: its calls are refused and it stops; nothing it does harms the
  // second one's run.
  auto commits = [&] {
    const std::string log = cluster.Log("chief-1");
    int n = 0;
    for (size_t at = log.find("committed step"); at != std::string::npos;
         at = log.find("committed step", at + 1)) {
      ++n;
    }
    return n;
  };
  const int commits_before = commits();
  cluster.Signal("chief-1", SIGCONT);
  const std::optional<int> first_exit = cluster.WaitForExit("chief-1", absl::Seconds(120));
  ASSERT_TRUE(first_exit.has_value()) << cluster.Log("chief-1");
  // Where it was frozen decides which refusal it meets first (a worker's, the PS's, the store's,
  // or its save in progress gone); it never commits again.
  EXPECT_NE(*first_exit, 0) << cluster.Log("chief-1");
  EXPECT_EQ(commits(), commits_before) << cluster.Log("chief-1");

  ASSERT_EQ(cluster.WaitForExit("chief-2", absl::Seconds(180)), 0) << cluster.Log("chief-2");
  EXPECT_EQ(second_step(), 4 * kStepsPerEpoch);
  CheckpointStore store(cluster.checkpoint_dir(), 100, 2);
  auto listings = store.List();
  ASSERT_TRUE(listings.ok()) << listings.status();
  ASSERT_FALSE(listings->empty());
  for (const CheckpointListing& listing : *listings) {
    ASSERT_TRUE(listing.committed) << listing.dir << " left incomplete";
    EXPECT_TRUE(store.Load(listing.step).ok()) << store.Load(listing.step).status();
  }
  EXPECT_EQ(listings->back().step, 4 * kStepsPerEpoch);
}

// A PS that restarts has seen no coordinator; the claim the newest one left in the checkpoint
// directory fences the older ones off from its first call, and a claim made later counts too.
TEST_F(TrainRolesTest, APsKnowsTheNewestCoordinatorFromTheCheckpointDirectorysClaim) {
  TrainCluster cluster(1, 1);
  cluster.UseRoleCredentials(kSecret);
  std::filesystem::create_directories(cluster.checkpoint_dir());
  ASSERT_TRUE(CheckpointStore(cluster.checkpoint_dir(), 3, 5).Claim().ok());
  cluster.StartServers();
  const std::string shard = cluster.checkpoint_dir() + "/fenced.state";

  ActAs(JobRole::kCoordinator, /*generation=*/3);
  ASSERT_TRUE(PsClient::Connect(cluster.ps_address(0), 0)->WaitForHealth(absl::Seconds(60)).ok());
  const absl::Status stale =
      PsClient::Connect(cluster.ps_address(0), 0)->SaveShard(shard).status();
  EXPECT_EQ(stale.code(), absl::StatusCode::kFailedPrecondition) << stale;
  EXPECT_THAT(std::string(stale.message()),
              AllOf(HasSubstr("generation 3"), HasSubstr("generation 5")));
  EXPECT_FALSE(std::filesystem::exists(shard));

  ActAs(JobRole::kCoordinator, /*generation=*/5);
  EXPECT_TRUE(PsClient::Connect(cluster.ps_address(0), 0)->SaveShard(shard).ok());

  // Generation 7 claims the directory without calling this PS; generation 6 is refused anyway.
  ASSERT_TRUE(CheckpointStore(cluster.checkpoint_dir(), 3, 7).Claim().ok());
  ActAs(JobRole::kCoordinator, /*generation=*/6);
  const absl::Status overtaken =
      PsClient::Connect(cluster.ps_address(0), 0)->RestoreShard(shard).status();
  EXPECT_EQ(overtaken.code(), absl::StatusCode::kFailedPrecondition) << overtaken;
  EXPECT_THAT(std::string(overtaken.message()), HasSubstr("generation 7"));
}

}  // namespace
}  // namespace tj::testing
