// PsCheckpointer with an s3:// checkpoint location against real tj-ps processes and a real
// S3-compatible server (tests/support/s3_test_server.h): every PS streams its shard to the bucket
// in parts and the coordinator puts the manifest last; killed PS processes come back with the
// exact values of the last checkpoint; a PS killed mid-save leaves the previous checkpoint the one
// restored; refused credentials stop a save and a restore with an error naming their Secret
// instead of reading as "no checkpoint".
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/base/coordinator_generation.h"
#include "coordinator/checkpoint/object_checkpoint_store.h"
#include "coordinator/checkpoint/object_transfer.h"
#include "coordinator/checkpoint/s3_object_store.h"
#include "coordinator/checkpoint/s3_request.h"
#include "coordinator/ps/object_shard_file.h"
#include "coordinator/ps/ps_client.h"
#include "coordinator/ps/ps_error.h"
#include "tests/coordinator/checkpoint/s3_test_env.h"
#include "tests/support/temp_dir.h"
#include "tests/support/wait_for.h"
#include "tjctl/local/process.h"
#include "trainer/sdk/ps_checkpointer.h"

#ifndef TJ_PS_BINARY
#error "TJ_PS_BINARY must name the tj-ps executable"
#endif

namespace tj::sdk {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::tj::testing::S3TestEnvironment;
using ::tj::testing::TempDir;
using ::tj::testing::WaitFor;

constexpr int64_t kMiB = int64_t{1} << 20;

struct Ps {
  local::ChildProcess process;
  std::shared_ptr<PsClient> client;
};

class S3CheckpointProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TJ_REQUIRE_S3_SERVER();
    const S3Options options = S3TestEnvironment::server()->Options();
    url_ = absl::StrCat("s3://", testing::kS3TestBucket, "/jobs/",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    env_ = {{"TJ_S3_ENDPOINT", options.endpoint},
            {"AWS_ACCESS_KEY_ID", options.access_key},
            {"AWS_SECRET_ACCESS_KEY", options.secret_key},
            {"TJ_S3_PART_BYTES", absl::StrCat(kMinS3PartBytes)},
            {"TJ_S3_CREDENTIALS_SECRET", "digits-s3"},
            {"TJ_S3_SCRATCH_DIR", scratch_.path()},
            {"TJ_CHECKPOINT_DIR", url_}};
    // The coordinator (this process) reads the same variables as the PS processes.
    for (const auto& [name, value] : env_) ::setenv(name.c_str(), value.c_str(), 1);
  }

  // A real tj-ps holding `variables` dense variables of 1 MiB (shards of more than one part).
  Ps StartPs(int task, int variables, int64_t bytes_per_second = 0) {
    std::map<std::string, std::string> env = env_;
    if (bytes_per_second > 0) {
      env["TJ_TEST_SHARD_BYTES_PER_SECOND"] = absl::StrCat(bytes_per_second);
    }
    auto process = local::ChildProcess::StartAndWaitListening(
        TJ_PS_BINARY, {"--address=127.0.0.1:0", absl::StrCat("--task=", task)}, env);
    EXPECT_TRUE(process.ok()) << process.status();
    if (!process.ok()) std::abort();
    std::shared_ptr<PsClient> client = PsClient::Connect(process->address(), task, {});
    std::vector<v1::VariableSpec> specs;
    for (int i = 0; i < variables; ++i) {
      v1::VariableSpec spec;
      spec.set_name(absl::StrCat("v", i));
      spec.add_shape(kMiB / 4);
      spec.mutable_initializer()->set_kind(v1::Initializer::RANDOM_NORMAL);
      spec.mutable_initializer()->set_stddev(1.0f);
      spec.mutable_initializer()->set_seed(static_cast<uint64_t>(task * 100 + i + 1));
      specs.push_back(std::move(spec));
    }
    EXPECT_TRUE(client->CreateVariables(std::move(specs)).ok());
    return Ps{*std::move(process), std::move(client)};
  }

  static std::vector<std::shared_ptr<PsClient>> Clients(const std::vector<Ps*>& ps) {
    std::vector<std::shared_ptr<PsClient>> clients;
    for (Ps* p : ps) clients.push_back(p->client);
    return clients;
  }

  // Multipart uploads in progress for `key` (ListMultipartUploads).
  static int UploadsInProgress(const std::string& key) {
    S3Request list;
    list.bucket = testing::kS3TestBucket;
    list.query = "uploads=";  // SeaweedFS lists none with a prefix= of a key with '/' in it
    absl::StatusOr<S3Response> response =
        PerformS3Request(S3TestEnvironment::server()->Options(), list);
    EXPECT_TRUE(response.ok()) << response.status();
    if (!response.ok()) return -1;
    int uploads = 0;
    const std::string tag = absl::StrCat("<Key>", key, "</Key>");
    for (size_t at = response->body.find(tag); at != std::string::npos;
         at = response->body.find(tag, at + 1)) {
      ++uploads;
    }
    return uploads;
  }

  TempDir scratch_;
  std::string url_;
  std::map<std::string, std::string> env_;
};

TEST_F(S3CheckpointProcessTest, KilledParameterServersComeBackWithTheLastCheckpointsValues) {
  Ps ps0 = StartPs(0, 7);
  Ps ps1 = StartPs(1, 7);
  PsCheckpointer checkpointer(url_, 3, Clients({&ps0, &ps1}));
  auto first = checkpointer.Save(10, {{"global_step", 10}});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->dir, url_ + "/ckpt-000000000010");
  EXPECT_GT(first->bytes, 2 * 7 * kMiB);
  // Training moves on, a second checkpoint records the new values.
  auto pulled = ps1.client->Pull({"v3"});
  ASSERT_TRUE(pulled.ok()) << pulled.status();
  ASSERT_TRUE(ps1.client->Push({"v3"}, {(*pulled)[0]}).ok());
  auto at_second = ps1.client->Pull({"v3"});
  ASSERT_TRUE(at_second.ok());
  auto second = checkpointer.Save(20, {{"global_step", 20}});
  ASSERT_TRUE(second.ok()) << second.status();

  ps0.process.KillAndWait(SIGKILL);
  ps1.process.KillAndWait(SIGKILL);
  Ps fresh0 = StartPs(0, 0);
  Ps fresh1 = StartPs(1, 0);
  auto restored = PsCheckpointer(url_, 3, Clients({&fresh0, &fresh1})).RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_TRUE(restored->has_value());
  EXPECT_EQ((*restored)->step, 20);
  EXPECT_EQ((*restored)->state["global_step"], 20);
  auto values = fresh1.client->Pull({"v3"});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ((*values)[0].data(), (*at_second)[0].data());
  EXPECT_TRUE(std::filesystem::is_empty(scratch_.path())) << "scratch files left behind";
}

TEST_F(S3CheckpointProcessTest, APsKilledMidSaveLeavesThePreviousCheckpointTheOneRestored) {
  // 12 MiB streamed at 3 MiB/s into parts of 5 MiB: the upload starts after about 1.7 s, and the
  // save has 2.3 s more to go when it is killed.
  Ps ps = StartPs(0, 12, 3 * kMiB);
  auto first = PsCheckpointer(url_, 3, Clients({&ps})).Save(1, {{"step", 1}});
  ASSERT_TRUE(first.ok()) << first.status();
  auto at_first = ps.client->Pull({"v0"});
  ASSERT_TRUE(at_first.ok());
  ASSERT_TRUE(ps.client->Push({"v0"}, {(*at_first)[0]}).ok());

  PsCheckpointer checkpointer(url_, 3, Clients({&ps}));
  std::optional<absl::StatusOr<SavedCheckpoint>> second;
  std::thread save([&] { second = checkpointer.Save(2, {{"step", 2}}); });
  // The shard goes up while it is written: a multipart upload is in progress, with no local file.
  const std::string shard_key = ParseS3Location(url_)->Key(
      absl::StrCat("ckpt-000000000002/", PsCheckpointer::ShardName(0, 1)));
  const bool writing = WaitFor([&] { return UploadsInProgress(shard_key) > 0; }, absl::Seconds(30));
  const bool no_local_file = std::filesystem::is_empty(scratch_.path());
  if (writing) ps.process.KillAndWait(SIGKILL);
  save.join();
  ASSERT_TRUE(writing);
  EXPECT_TRUE(no_local_file) << "the PS staged its shard in a scratch file";
  ASSERT_FALSE(second->ok());
  EXPECT_EQ(PsTaskOf(second->status()), 0) << second->status();

  Ps restarted = StartPs(0, 0);
  auto restored = PsCheckpointer(url_, 3, Clients({&restarted})).RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_TRUE(restored->has_value());
  EXPECT_EQ((*restored)->step, 1);
  auto values = restarted.client->Pull({"v0"});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ((*values)[0].data(), (*at_first)[0].data());
}

TEST_F(S3CheckpointProcessTest, RefusedCredentialsStopSaveAndRestoreNamingTheirSecret) {
  Ps ps = StartPs(0, 1);
  ASSERT_TRUE(PsCheckpointer(url_, 3, Clients({&ps})).Save(5, {{"step", 5}}).ok());
  ::setenv("AWS_SECRET_ACCESS_KEY", "refused", 1);
  PsCheckpointer refused(url_, 3, Clients({&ps}));
  auto saved = refused.Save(6, {{"step", 6}});
  EXPECT_TRUE(absl::IsPermissionDenied(saved.status())) << saved.status();
  EXPECT_THAT(saved.status().message(), HasSubstr("Secret digits-s3"));
  auto restored = refused.RestoreLatest();
  EXPECT_TRUE(absl::IsPermissionDenied(restored.status()))
      << "refused credentials must not read as \"no checkpoint, start over\": "
      << restored.status();
}

// Credentials allowed only under s3://tj-ckpt/team-a/ (an IAM policy scoped to the job's prefix;
// SeaweedFS's "Action:bucket/prefix/*" grants here), nothing on the bucket itself: the
// coordinator's and the PS's access checks list the checkpoint prefix only, so save and restore
// work.
TEST_F(S3CheckpointProcessTest, CredentialsScopedToTheCheckpointPrefixSaveAndRestore) {
  const S3Options scoped = S3TestEnvironment::server()->ScopedOptions();
  url_ = absl::StrCat("s3://", testing::kS3TestBucket, "/", testing::kS3TestScopedPrefix, "/",
                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
  env_["AWS_ACCESS_KEY_ID"] = scoped.access_key;
  env_["AWS_SECRET_ACCESS_KEY"] = scoped.secret_key;
  env_["TJ_CHECKPOINT_DIR"] = url_;
  for (const auto& [name, value] : env_) ::setenv(name.c_str(), value.c_str(), 1);
  Ps ps = StartPs(0, 2);
  auto saved = PsCheckpointer(url_, 3, Clients({&ps})).Save(5, {{"step", 5}});
  ASSERT_TRUE(saved.ok()) << saved.status();
  ps.process.KillAndWait(SIGKILL);
  Ps fresh = StartPs(0, 0);
  auto restored = PsCheckpointer(url_, 3, Clients({&fresh})).RestoreLatest();
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_TRUE(restored->has_value());
  EXPECT_EQ((*restored)->step, 5);
}

TEST_F(S3CheckpointProcessTest, AMissingBucketIsNamedBeforeAnyShardIsWritten) {
  Ps ps = StartPs(0, 1);
  auto saved = PsCheckpointer("s3://tj-no-such-bucket/jobs/x", 3, Clients({&ps})).Save(1, {});
  EXPECT_TRUE(absl::IsFailedPrecondition(saved.status())) << saved.status();
  EXPECT_THAT(saved.status().message(), HasSubstr("bucket tj-no-such-bucket does not exist"));
}

TEST_F(S3CheckpointProcessTest, AMissingEndpointIsNamed) {
  ::unsetenv("TJ_S3_ENDPOINT");
  Ps ps = StartPs(0, 1);
  auto saved = PsCheckpointer(url_, 3, Clients({&ps})).Save(1, {});
  EXPECT_TRUE(absl::IsInvalidArgument(saved.status())) << saved.status();
  EXPECT_THAT(saved.status().message(), HasSubstr("TJ_S3_ENDPOINT"));
}

// A save cut short after some parts went up (here the caller goes away, as a coordinator that
// cancels does) aborts its multipart upload: no object, no parts left in the bucket. A whole save
// of the same store then reads back as the same records a file would hold.
TEST_F(S3CheckpointProcessTest, ASaveCutShortAbortsItsUploadAndAWholeOneMatchesAFile) {
  VariableStore store;
  v1::CreateVariablesRequest create;
  for (int i = 0; i < 4; ++i) {
    v1::VariableSpec& spec = *create.add_variables();
    spec.set_name(absl::StrCat("v", i));
    spec.add_shape(4 * kMiB / 4);
    spec.mutable_initializer()->set_kind(v1::Initializer::RANDOM_NORMAL);
    spec.mutable_initializer()->set_seed(static_cast<uint64_t>(i + 1));
  }
  ASSERT_TRUE(store.Create(create).ok());
  const std::string key = ParseS3Location(url_)->Key("cut.state");
  ShardFileOptions cut;
  cut.on_progress = [](int64_t bytes, int64_t) {
    return bytes > 12 * kMiB ? absl::CancelledError("the coordinator went away") : absl::OkStatus();
  };
  const absl::Status cancelled = SaveShardAnywhere(store, url_ + "/cut.state", cut).status();
  EXPECT_TRUE(absl::IsCancelled(cancelled)) << cancelled;
  S3ObjectStore objects(S3TestEnvironment::server()->Options(), testing::kS3TestBucket);
  auto size = objects.Size(key);
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_FALSE(size->has_value()) << "a cut-short save became visible";
  EXPECT_EQ(UploadsInProgress(key), 0) << "the multipart upload was not aborted";

  auto streamed = SaveShardAnywhere(store, url_ + "/whole.state");
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  auto file = SaveShardFile(store, scratch_.Join("whole.state"));
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(streamed->bytes(), file->bytes());
  EXPECT_EQ(streamed->crc32c(), file->crc32c());
  auto uploaded = ComputeObjectDigest(objects, ParseS3Location(url_)->Key("whole.state"));
  ASSERT_TRUE(uploaded.ok()) << uploaded.status();
  EXPECT_EQ(uploaded->bytes, static_cast<uint64_t>(file->bytes()));
  EXPECT_EQ(uploaded->crc32c, file->crc32c());
}

// A PS that restarts has seen no coordinator; the claim the newest one left in the bucket fences
// the older ones off from its first call, and a claim made later counts too (as a directory's
// claim file does: TrainRolesTest.APsKnowsTheNewestCoordinatorFromTheCheckpointDirectorysClaim).
TEST_F(S3CheckpointProcessTest, APsKnowsTheNewestCoordinatorFromTheBucketsClaim) {
  struct ResetGeneration {
    ~ResetGeneration() { SetCoordinatorGenerationForTesting(0); }
  } reset;
  const S3Options options = S3TestEnvironment::server()->Options();
  S3ObjectStore objects(options, testing::kS3TestBucket);
  const std::string prefix = ParseS3Location(url_)->prefix;
  ASSERT_TRUE(ObjectCheckpointStore(objects, url_, prefix, 3, 5).Claim().ok());
  // No coordinator has called this PS yet.
  auto ps = local::ChildProcess::StartAndWaitListening(TJ_PS_BINARY,
                                                       {"--address=127.0.0.1:0", "--task=0"}, env_);
  ASSERT_TRUE(ps.ok()) << ps.status();
  const std::string shard = url_ + "/fenced.shard";

  SetCoordinatorGenerationForTesting(3);
  const absl::Status stale = PsClient::Connect(ps->address(), 0)->SaveShard(shard).status();
  EXPECT_EQ(stale.code(), absl::StatusCode::kFailedPrecondition) << stale;
  EXPECT_THAT(std::string(stale.message()),
              AllOf(HasSubstr("generation 3"), HasSubstr("generation 5")));
  auto size = objects.Size(prefix + "/fenced.shard");
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_FALSE(size->has_value()) << "the refused save wrote its shard";

  SetCoordinatorGenerationForTesting(5);
  EXPECT_TRUE(PsClient::Connect(ps->address(), 0)->SaveShard(shard).ok());

  // Generation 7 claims the bucket without calling this PS; generation 6 is refused anyway.
  ASSERT_TRUE(ObjectCheckpointStore(objects, url_, prefix, 3, 7).Claim().ok());
  SetCoordinatorGenerationForTesting(6);
  const absl::Status overtaken = PsClient::Connect(ps->address(), 0)->RestoreShard(shard).status();
  EXPECT_EQ(overtaken.code(), absl::StatusCode::kFailedPrecondition) << overtaken;
  EXPECT_THAT(std::string(overtaken.message()), HasSubstr("generation 7"));
  // And a coordinator of generation 6 cannot claim the bucket back.
  SetCoordinatorGenerationForTesting(0);
  EXPECT_TRUE(
      absl::IsFailedPrecondition(ObjectCheckpointStore(objects, url_, prefix, 3, 6).Claim()));
}

}  // namespace
}  // namespace tj::sdk
