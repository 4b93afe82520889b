// Checkpoints in a real S3-compatible bucket (ObjectCheckpointStore over S3ObjectStore): a shard
// file streamed up in parts and back, the manifest written last so a save killed mid-upload is not
// a checkpoint, fallback past a corrupt object, retention, and the errors of a missing bucket and
// refused credentials before anything is written.
#include "coordinator/checkpoint/object_checkpoint_store.h"

#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "coordinator/checkpoint/object_transfer.h"
#include "coordinator/checkpoint/record_file.h"
#include "coordinator/checkpoint/s3_object_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/coordinator/checkpoint/s3_test_env.h"
#include "tests/support/temp_dir.h"

namespace tj {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::S3TestEnvironment;

class ObjectCheckpointStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TJ_REQUIRE_S3_SERVER();
    objects_ = std::make_unique<S3ObjectStore>(S3TestEnvironment::server()->Options(),
                                               testing::kS3TestBucket);
    prefix_ =
        absl::StrCat("jobs/", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    url_ = absl::StrCat("s3://", testing::kS3TestBucket, "/", prefix_);
  }

  ObjectCheckpointStore Store(int keep = 3, uint64_t generation = 0) {
    return ObjectCheckpointStore(*objects_, url_, prefix_, keep, generation);
  }

  // A record file of `records` records of `record_bytes` bytes each, every one different.
  std::string WriteShard(const std::string& name, int records, size_t record_bytes) {
    const std::string path = dir_.Join(name);
    auto writer = RecordFileWriter::Create(path);
    EXPECT_TRUE(writer.ok()) << writer.status();
    for (int i = 0; i < records; ++i) {
      EXPECT_TRUE((*writer)->Append(std::string(record_bytes, static_cast<char>('a' + i))).ok());
    }
    EXPECT_TRUE((*writer)->Finish().ok());
    return path;
  }

  // Saves one checkpoint of `step` with the shard file `path` as "ps-0.shard".
  void Save(ObjectCheckpointStore& store, int64_t step, const std::string& path) {
    auto writer = store.BeginCheckpoint(step);
    ASSERT_TRUE(writer.ok()) << writer.status();
    auto key = (*writer)->Key("ps-0.shard");
    ASSERT_TRUE(key.ok()) << key.status();
    auto digest = UploadFile(*objects_, path, *key);
    ASSERT_TRUE(digest.ok()) << digest.status();
    ASSERT_TRUE((*writer)->Commit({{"global_step", step}}, {{"ps-0.shard", *digest}}).ok());
  }

  testing::TempDir dir_;
  std::unique_ptr<S3ObjectStore> objects_;
  std::string prefix_;
  std::string url_;
};

TEST_F(ObjectCheckpointStoreTest, AShardLargerThanAPartRoundTripsWithItsRecordsIntact) {
  // 11 records of 1 MiB: more than two 5 MiB parts.
  const std::string path = WriteShard("shard", 11, 1 << 20);
  ObjectCheckpointStore store = Store();
  Save(store, 10, path);

  auto latest = store.LatestValid();
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ((*latest)->step, 10);
  EXPECT_EQ((*latest)->state["global_step"], 10);
  EXPECT_EQ((*latest)->dir, url_ + "/ckpt-000000000010");
  ASSERT_EQ((*latest)->shards.size(), 1u);
  auto key = store.KeyOfPath((*latest)->FilePath((*latest)->shards[0]));
  ASSERT_TRUE(key.ok()) << key.status();
  const std::string back = dir_.Join("restored");
  ASSERT_TRUE(DownloadFile(*objects_, *key, back, (*latest)->shards[0].digest).ok());

  auto reader = RecordFileReader::Open(back);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::string record;
  for (int i = 0; i < 11; ++i) {
    auto more = (*reader)->Next(&record);
    ASSERT_TRUE(more.ok() && *more) << "record " << i;
    EXPECT_EQ(record, std::string(1 << 20, static_cast<char>('a' + i))) << "record " << i;
  }
  auto end = (*reader)->Next(&record);
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(*end);
}

TEST_F(ObjectCheckpointStoreTest, ASaveKilledMidUploadLeavesThePreviousCheckpointTheLatest) {
  ObjectCheckpointStore store = Store();
  Save(store, 10, WriteShard("old", 2, 1000));
  const std::string big = WriteShard("new", 7, 1 << 20);
  const std::string second = store.Key(20, "ps-1.shard");
  // The coordinator and one PS die mid-save: one shard finished, the other with a part of it sent
  // and the rest not, no manifest. _exit runs no destructors, as SIGKILL would.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    S3ObjectStore objects(S3TestEnvironment::server()->Options(), testing::kS3TestBucket);
    ObjectCheckpointStore dying(objects, url_, prefix_, 3);
    auto writer = dying.BeginCheckpoint(20);
    bool sent = writer.ok() && UploadFile(objects, big, *(*writer)->Key("ps-0.shard")).ok();
    auto upload = objects.BeginUpload(second);
    sent = sent && upload.ok() && (*upload)->Append(std::string(kMinS3PartBytes + 1, 'x')).ok();
    ::_exit(sent ? 9 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 9) << "the child did not get that far";

  auto listed = store.List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_TRUE((*listed)[0].committed);
  EXPECT_EQ((*listed)[1].step, 20);
  EXPECT_FALSE((*listed)[1].committed) << "a save without its manifest is not a checkpoint";
  auto size = objects_->Size(second);
  ASSERT_TRUE(size.ok());
  EXPECT_FALSE(size->has_value()) << "the killed upload's object appeared";
  auto latest = store.LatestValid();
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ((*latest)->step, 10);

  // The next save of a later step removes the unfinished one.
  Save(store, 30, WriteShard("next", 1, 100));
  listed = store.List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].step, 10);
  EXPECT_EQ((*listed)[1].step, 30);
}

TEST_F(ObjectCheckpointStoreTest, ACorruptShardObjectFallsBackToThePreviousCheckpoint) {
  ObjectCheckpointStore store = Store();
  Save(store, 10, WriteShard("a", 3, 1000));
  Save(store, 20, WriteShard("b", 3, 1000));
  // Same size, one byte different: only the CRC catches it.
  const std::string key = store.Key(20, "ps-0.shard");
  auto bytes = objects_->Get(key, 1 << 20);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  (*bytes)[bytes->size() / 2] ^= 0x20;
  ASSERT_TRUE(objects_->Put(key, *bytes).ok());

  auto latest = store.LatestValid();
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ((*latest)->step, 10);
  auto load = store.Load(20);
  EXPECT_TRUE(absl::IsDataLoss(load.status())) << load.status();
  EXPECT_THAT(load.status().message(), HasSubstr(key));
  EXPECT_THAT(load.status().message(), HasSubstr("crc32c"));
}

TEST_F(ObjectCheckpointStoreTest, ACorruptManifestFallsBackAndNoneValidIsDataLoss) {
  ObjectCheckpointStore store = Store();
  Save(store, 10, WriteShard("a", 1, 100));
  ASSERT_TRUE(objects_->Put(store.Key(10, kManifestFileName), "{\"step\": 1").ok());
  auto latest = store.LatestValid();
  EXPECT_TRUE(absl::IsDataLoss(latest.status())) << latest.status();
  EXPECT_THAT(latest.status().message(), HasSubstr(url_));
}

TEST_F(ObjectCheckpointStoreTest, RetentionDeletesTheObjectsOfOlderCheckpoints) {
  ObjectCheckpointStore store = Store(/*keep=*/2);
  for (int64_t step : {1, 2, 3}) Save(store, step, WriteShard(absl::StrCat(step), 1, 100));
  auto listed = store.List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].step, 2);
  EXPECT_EQ((*listed)[1].step, 3);
  auto left = objects_->List(prefix_ + "/ckpt-000000000001/");
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->empty());
}

TEST_F(ObjectCheckpointStoreTest, AMissingBucketStopsTheSaveBeforeAnythingIsWritten) {
  S3ObjectStore missing(S3TestEnvironment::server()->Options(), "tj-no-such-bucket");
  ObjectCheckpointStore store(missing, "s3://tj-no-such-bucket/jobs/x", "jobs/x", 3);
  auto writer = store.BeginCheckpoint(1);
  EXPECT_TRUE(absl::IsFailedPrecondition(writer.status())) << writer.status();
  EXPECT_THAT(writer.status().message(), HasSubstr("bucket tj-no-such-bucket does not exist"));
  auto latest = store.LatestValid();
  EXPECT_TRUE(absl::IsFailedPrecondition(latest.status()))
      << "a missing bucket must not read as \"no checkpoint, start over\": " << latest.status();
}

TEST_F(ObjectCheckpointStoreTest, RefusedCredentialsAreNotMistakenForNoCheckpoint) {
  ObjectCheckpointStore good = Store();
  Save(good, 10, WriteShard("a", 1, 100));
  S3Options options = S3TestEnvironment::server()->Options();
  options.secret_key = "wrong";
  options.credentials_source = "Secret digits-s3";
  S3ObjectStore refused(options, testing::kS3TestBucket);
  ObjectCheckpointStore store(refused, url_, prefix_, 3);
  auto latest = store.LatestValid();
  EXPECT_TRUE(absl::IsPermissionDenied(latest.status())) << latest.status();
  EXPECT_THAT(latest.status().message(), HasSubstr("Secret digits-s3"));
  auto writer = store.BeginCheckpoint(20);
  EXPECT_TRUE(absl::IsPermissionDenied(writer.status())) << writer.status();
  auto listed = good.List();
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), 1u) << "nothing half-written";
}

// Two coordinators at once (a force-deleted pod's process living on): the newer generation owns
// the bucket's location; the older one can neither begin nor commit a save nor remove the newer
// one's save in progress, and the claim object never goes back to it.
TEST_F(ObjectCheckpointStoreTest,
       AnOlderCoordinatorGenerationIsFencedOffAndKeepsItsHandsOffNewerSaves) {
  ObjectCheckpointStore older = Store(3, /*generation=*/1);
  ObjectCheckpointStore newer = Store(3, /*generation=*/2);
  Save(older, 10, WriteShard("a", 1, 100));
  auto stale_writer = older.BeginCheckpoint(20);
  ASSERT_TRUE(stale_writer.ok()) << stale_writer.status();
  auto stale_key = (*stale_writer)->Key("ps-0.shard");
  ASSERT_TRUE(stale_key.ok());
  auto stale_digest = UploadFile(*objects_, WriteShard("stale", 1, 100), *stale_key);
  ASSERT_TRUE(stale_digest.ok()) << stale_digest.status();

  // The newer one starts (claims before restoring) and takes over step 20.
  ASSERT_TRUE(newer.Claim().ok());
  const absl::Status begin = older.BeginCheckpoint(30).status();
  EXPECT_EQ(begin.code(), absl::StatusCode::kFailedPrecondition) << begin;
  EXPECT_THAT(std::string(begin.message()),
              AllOf(HasSubstr("generation 2"), HasSubstr("generation 1"), HasSubstr(url_)));
  auto writer = newer.BeginCheckpoint(20);
  ASSERT_TRUE(writer.ok()) << writer.status();
  auto key = (*writer)->Key("ps-0.shard");
  ASSERT_TRUE(key.ok());
  auto digest = UploadFile(*objects_, WriteShard("newer", 2, 100), *key);
  ASSERT_TRUE(digest.ok()) << digest.status();

  // The older one's commit (of a shard the same size as its own) is refused, and its abandoned
  // writer leaves the newer save alone.
  const absl::Status commit =
      (*stale_writer)->Commit({{"global_step", 20}}, {{"ps-0.shard", *digest}});
  EXPECT_EQ(commit.code(), absl::StatusCode::kFailedPrecondition) << commit;
  EXPECT_THAT(std::string(commit.message()), HasSubstr("generation 2"));
  stale_writer->reset();
  auto size = objects_->Size(*key);
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(*size, std::optional<uint64_t>(digest->bytes)) << "the older writer removed it";
  ASSERT_TRUE((*writer)->Commit({{"global_step", 20}}, {{"ps-0.shard", *digest}}).ok());
  writer->reset();
  auto listed = newer.List();
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::vector<int64_t> steps;
  for (const CheckpointListing& listing : *listed) steps.push_back(listing.step);
  EXPECT_THAT(steps, ElementsAre(10, 20));
  auto latest = newer.LatestValid();
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ((*latest)->step, 20);

  // The older one claiming again changes nothing: the claim object still holds the newer one.
  EXPECT_EQ(older.Claim().code(), absl::StatusCode::kFailedPrecondition);
  auto claim = objects_->Get(newer.ClaimKey(), 64);
  ASSERT_TRUE(claim.ok()) << claim.status();
  EXPECT_EQ(*claim, "2\n");
  // A coordinator without generation after one with: refused too, naming the claim object.
  const absl::Status unversioned = Store(3, 0).Claim();
  EXPECT_EQ(unversioned.code(), absl::StatusCode::kFailedPrecondition) << unversioned;
  EXPECT_THAT(std::string(unversioned.message()), HasSubstr(kStoreGenerationFileName));
}

// A manifest is put only where none is: a coordinator that passed its claim check just before a
// newer one claimed (the window between the check and the put) still cannot replace the newer
// one's committed checkpoint of the same step.
TEST_F(ObjectCheckpointStoreTest, ACommittedManifestIsNeverOverwritten) {
  ObjectCheckpointStore store = Store(3, 4);
  auto first = store.BeginCheckpoint(7);
  ASSERT_TRUE(first.ok()) << first.status();
  auto key = (*first)->Key("ps-0.shard");
  ASSERT_TRUE(key.ok());
  auto digest = UploadFile(*objects_, WriteShard("a", 1, 100), *key);
  ASSERT_TRUE(digest.ok()) << digest.status();
  // Another writer's manifest lands first (as one racing this commit would).
  ASSERT_TRUE(objects_->Put(store.Key(7, kManifestFileName), "{\"other\": true}").ok());
  const absl::Status commit = (*first)->Commit({{"global_step", 7}}, {{"ps-0.shard", *digest}});
  EXPECT_EQ(commit.code(), absl::StatusCode::kFailedPrecondition) << commit;
  EXPECT_THAT(std::string(commit.message()), HasSubstr("committed by another coordinator"));
  first->reset();  // and leaves the other one's checkpoint in place
  auto manifest = objects_->Get(store.Key(7, kManifestFileName), 1024);
  ASSERT_TRUE(manifest.ok());
  EXPECT_EQ(*manifest, "{\"other\": true}");
}

}  // namespace
}  // namespace tj
