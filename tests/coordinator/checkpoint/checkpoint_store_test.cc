#include "coordinator/checkpoint/checkpoint_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "coordinator/checkpoint/record_file.h"
#include "tests/coordinator/checkpoint/log_capture.h"
#include "tests/support/temp_dir.h"

namespace tj {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

void WriteRaw(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string CkptDir(const testing::TempDir& dir, int64_t step) {
  return dir.Join(absl::StrFormat("ckpt-%012d", step));
}

// Two shards (as two parameter servers would write them) and the coordinator's state.
absl::Status Save(CheckpointStore& store, int64_t step) {
  absl::StatusOr<std::unique_ptr<CheckpointWriter>> writer = store.BeginCheckpoint(step);
  if (!writer.ok()) return writer.status();
  std::map<std::string, FileDigest> digests;
  for (const std::string name : {"ps-0.rec", "ps-1.rec"}) {
    absl::StatusOr<std::string> path = (*writer)->ShardPath(name);
    if (!path.ok()) return path.status();
    auto shard = RecordFileWriter::Create(*path);
    if (!shard.ok()) return shard.status();
    if (absl::Status s = (*shard)->Append(name + " at step " + std::to_string(step)); !s.ok()) {
      return s;
    }
    if (absl::Status s = (*shard)->Append(std::string(1000, 'w')); !s.ok()) return s;
    absl::StatusOr<FileDigest> digest = (*shard)->Finish();
    if (!digest.ok()) return digest.status();
    digests[name] = *digest;
  }
  const nlohmann::json state = {{"data_position", step * 32}, {"total_run_calls", step + 7}};
  return (*writer)->Commit(state, digests);
}

std::vector<int64_t> Steps(const CheckpointStore& store, bool committed_only = true) {
  std::vector<int64_t> steps;
  absl::StatusOr<std::vector<CheckpointListing>> listings = store.List();
  EXPECT_TRUE(listings.ok()) << listings.status();
  for (const CheckpointListing& listing : listings.value_or(std::vector<CheckpointListing>{})) {
    if (listing.committed || !committed_only) steps.push_back(listing.step);
  }
  return steps;
}

int64_t LatestStep(const CheckpointStore& store) {
  absl::StatusOr<std::optional<Checkpoint>> latest = store.LatestValid();
  EXPECT_TRUE(latest.ok()) << latest.status();
  if (!latest.ok() || !latest->has_value()) return -1;
  return (*latest)->step;
}

TEST(CheckpointStoreTest, AnEmptyOrMissingStoreHasNoCheckpoint) {
  testing::TempDir dir;
  CheckpointStore store(dir.Join("not-yet"), 3);
  absl::StatusOr<std::optional<Checkpoint>> latest = store.LatestValid();
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_FALSE(latest->has_value());
  EXPECT_TRUE(Steps(store).empty());
}

TEST(CheckpointStoreTest, RoundTripsStateAndShards) {
  testing::TempDir dir;
  CheckpointStore store(dir.path(), 3);
  ASSERT_TRUE(Save(store, 40).ok());

  absl::StatusOr<std::optional<Checkpoint>> latest = store.LatestValid();
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  const Checkpoint& checkpoint = **latest;
  EXPECT_EQ(checkpoint.step, 40);
  EXPECT_EQ(checkpoint.dir, CkptDir(dir, 40));
  EXPECT_EQ(checkpoint.state["data_position"], 1280);
  EXPECT_EQ(checkpoint.state["total_run_calls"], 47);
  EXPECT_THAT(checkpoint.created_time, HasSubstr("T"));
  ASSERT_EQ(checkpoint.shards.size(), 2u);
  EXPECT_EQ(checkpoint.shards[0].name, "ps-0.rec");
  EXPECT_EQ(checkpoint.shards[0].digest, *ComputeFileDigest(checkpoint.ShardPath("ps-0.rec")));

  auto reader = RecordFileReader::Open(checkpoint.ShardPath("ps-1.rec"));
  ASSERT_TRUE(reader.ok());
  std::string record;
  ASSERT_TRUE(*(*reader)->Next(&record));
  EXPECT_EQ(record, "ps-1.rec at step 40");

  const std::string manifest = ReadFile(CkptDir(dir, 40) + "/MANIFEST.json");
  EXPECT_THAT(manifest, AllOf(HasSubstr("\"format_version\": 1"), HasSubstr("\"step\": 40"),
                              HasSubstr("\"crc32c\":"), HasSubstr("\"manifest_crc32c\":")));
}

TEST(CheckpointStoreTest, KeepsTheNewestN) {
  testing::TempDir dir;
  CheckpointStore store(dir.path(), 2);
  for (int64_t step : {10, 20, 30, 40, 50}) ASSERT_TRUE(Save(store, step).ok());
  EXPECT_THAT(Steps(store, /*committed_only=*/false), ElementsAre(40, 50));
  EXPECT_EQ(LatestStep(store), 50);
}

TEST(CheckpointStoreTest, KeepBelowOneKeepsOne) {
  testing::TempDir dir;
  CheckpointStore store(dir.path(), 0);
  ASSERT_TRUE(Save(store, 1).ok());
  ASSERT_TRUE(Save(store, 2).ok());
  EXPECT_THAT(Steps(store), ElementsAre(2));
}

class CorruptNewestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(Save(store_, 100).ok());
    ASSERT_TRUE(Save(store_, 200).ok());
  }
  std::string Newest(const std::string& name) const { return CkptDir(dir_, 200) + "/" + name; }

  // LatestValid() with the log captured: the step it returned, and the log.
  std::pair<int64_t, std::string> Restore() {
    testing::LogCapture log;
    const int64_t step = LatestStep(store_);
    return {step, log.text()};
  }

  testing::TempDir dir_;
  CheckpointStore store_{dir_.path(), 5};
};

TEST_F(CorruptNewestTest, AFlippedByteInAShardFallsBackNamingTheFileAndBothChecksums) {
  std::string bytes = ReadFile(Newest("ps-1.rec"));
  bytes[500] ^= 0x01;
  WriteRaw(Newest("ps-1.rec"), bytes);

  const auto [step, log] = Restore();

  EXPECT_EQ(step, 100);
  EXPECT_THAT(log, HasSubstr("[warning] checkpoint " + CkptDir(dir_, 200) +
                             ": skipped, falling back to the previous one: shard " +
                             Newest("ps-1.rec") + ": crc32c mismatch: expected 0x"));
  EXPECT_THAT(log, HasSubstr(", actual 0x"));
}

TEST_F(CorruptNewestTest, ATruncatedShardFallsBackNamingBothSizes) {
  const uint64_t size = std::filesystem::file_size(Newest("ps-0.rec"));
  std::filesystem::resize_file(Newest("ps-0.rec"), size - 10);

  const auto [step, log] = Restore();

  EXPECT_EQ(step, 100);
  EXPECT_THAT(log, HasSubstr("shard " + Newest("ps-0.rec") + ": size mismatch: expected " +
                             std::to_string(size) + " bytes, actual " + std::to_string(size - 10) +
                             " bytes"));
}

TEST_F(CorruptNewestTest, AMissingShardFallsBackNamingIt) {
  std::filesystem::remove(Newest("ps-0.rec"));

  const auto [step, log] = Restore();

  EXPECT_EQ(step, 100);
  EXPECT_THAT(log, HasSubstr("shard " + Newest("ps-0.rec") + ": No such file or directory"));
}

TEST_F(CorruptNewestTest, ATruncatedManifestFallsBack) {
  const std::string manifest = ReadFile(Newest("MANIFEST.json"));
  WriteRaw(Newest("MANIFEST.json"), manifest.substr(0, manifest.size() / 2));

  const auto [step, log] = Restore();

  EXPECT_EQ(step, 100);
  EXPECT_THAT(log, HasSubstr(Newest("MANIFEST.json") + ": not valid JSON (truncated?)"));
}

TEST_F(CorruptNewestTest, AnEditedStateInTheManifestFallsBack) {
  std::string manifest = ReadFile(Newest("MANIFEST.json"));
  const size_t at = manifest.find("\"data_position\": 6400");
  ASSERT_NE(at, std::string::npos) << manifest;
  manifest[at + 17] = '7';
  WriteRaw(Newest("MANIFEST.json"), manifest);

  const auto [step, log] = Restore();

  EXPECT_EQ(step, 100);
  EXPECT_THAT(log, HasSubstr(Newest("MANIFEST.json") + ": content checksum mismatch: expected 0x"));
}

TEST_F(CorruptNewestTest, IfNoneVerifiesItIsDataLossAndNothingIsDeleted) {
  std::filesystem::remove(Newest("ps-0.rec"));
  std::filesystem::remove(CkptDir(dir_, 100) + "/ps-1.rec");

  absl::StatusOr<std::optional<Checkpoint>> latest = store_.LatestValid();

  EXPECT_EQ(latest.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(latest.status().message()),
              AllOf(HasSubstr(Newest("ps-0.rec")), HasSubstr(CkptDir(dir_, 100) + "/ps-1.rec")));
  EXPECT_THAT(Steps(store_), ElementsAre(100, 200));
}

TEST_F(CorruptNewestTest, RetentionNeverDeletesTheOnlyValidCheckpoint) {
  std::filesystem::remove(Newest("ps-0.rec"));
  CheckpointStore keep_one(dir_.path(), 1);
  ASSERT_EQ(LatestStep(keep_one), 100);

  // Resumed from 100, the job saves 150: 200 is still the newest by step, and 150 is kept too.
  ASSERT_TRUE(Save(keep_one, 150).ok());

  EXPECT_THAT(Steps(keep_one), ElementsAre(150, 200));
  EXPECT_EQ(LatestStep(keep_one), 150);
}

TEST_F(CorruptNewestTest, SavingTheSameStepAgainReplacesACorruptCheckpoint) {
  std::filesystem::remove(Newest("ps-0.rec"));
  ASSERT_TRUE(Save(store_, 200).ok());
  EXPECT_EQ(LatestStep(store_), 200);
}

TEST(CheckpointStoreTest, AnIncompleteDirectoryIsIgnoredAndLaterCleanedUp) {
  testing::TempDir dir;
  CheckpointStore store(dir.path(), 3);
  ASSERT_TRUE(Save(store, 10).ok());
  // A save that crashed before its manifest: shards, maybe a temporary file, no MANIFEST.json.
  std::filesystem::create_directories(CkptDir(dir, 20));
  WriteRaw(CkptDir(dir, 20) + "/ps-0.rec", "partial");
  WriteRaw(CkptDir(dir, 20) + "/MANIFEST.json.tmp-0123456789abcdef", "{\"step\"");
  std::filesystem::create_directories(CkptDir(dir, 5));

  testing::LogCapture log;
  EXPECT_EQ(LatestStep(store), 10);
  EXPECT_THAT(log.text(), HasSubstr("checkpoint " + CkptDir(dir, 20) +
                                    ": ignored: no "
                                    "MANIFEST.json (a save that did not finish)"));
  EXPECT_THAT(log.text(), Not(HasSubstr("[warning]")));
  EXPECT_THAT(Steps(store, /*committed_only=*/false), ElementsAre(5, 10, 20));

  // Committing 30 removes incomplete directories older than it.
  ASSERT_TRUE(Save(store, 30).ok());
  EXPECT_THAT(Steps(store, /*committed_only=*/false), ElementsAre(10, 30));
}

TEST(CheckpointStoreTest, OtherEntriesInTheDirectoryAreLeftAlone) {
  testing::TempDir dir;
  CheckpointStore store(dir.path(), 1);
  std::filesystem::create_directories(dir.Join("ckpt-12"));
  std::filesystem::create_directories(dir.Join("logs"));
  WriteRaw(dir.Join("ckpt-000000000001"), "a file, not a checkpoint");
  ASSERT_TRUE(Save(store, 2).ok());
  ASSERT_TRUE(Save(store, 3).ok());
  EXPECT_TRUE(std::filesystem::exists(dir.Join("ckpt-12")));
  EXPECT_TRUE(std::filesystem::exists(dir.Join("logs")));
  EXPECT_TRUE(std::filesystem::exists(dir.Join("ckpt-000000000001")));
  EXPECT_THAT(Steps(store), ElementsAre(3));
}

TEST(CheckpointStoreTest, ACommittedStepIsNotOverwritten) {
  testing::TempDir dir;
  CheckpointStore store(dir.path(), 3);
  ASSERT_TRUE(Save(store, 7).ok());
  EXPECT_EQ(store.BeginCheckpoint(7).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(LatestStep(store), 7);
}

TEST(CheckpointStoreTest, AnAbandonedSaveLeavesNothing) {
  testing::TempDir dir;
  CheckpointStore store(dir.path(), 3);
  {
    auto writer = store.BeginCheckpoint(9);
    ASSERT_TRUE(writer.ok());
    WriteRaw(*(*writer)->ShardPath("ps-0.rec"), "x");
  }
  EXPECT_TRUE(Steps(store, /*committed_only=*/false).empty());
}

// Two coordinators at once (a force-deleted pod's process living on): the newer generation owns
// the directory; the older one can neither begin nor commit a save nor remove the newer one's.
TEST(CheckpointStoreTest, AnOlderCoordinatorGenerationIsFencedOffAndKeepsItsHandsOffNewerSaves) {
  testing::TempDir dir;
  CheckpointStore older(dir.path(), 3, /*generation=*/1);
  CheckpointStore newer(dir.path(), 3, /*generation=*/2);
  ASSERT_TRUE(Save(older, 10).ok());
  auto stale_writer = older.BeginCheckpoint(20);
  ASSERT_TRUE(stale_writer.ok());

  // The newer one starts (claims before restoring) and takes over step 20.
  ASSERT_TRUE(newer.Claim().ok());
  const absl::Status begin = older.BeginCheckpoint(30).status();
  EXPECT_EQ(begin.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(begin.message()),
              AllOf(HasSubstr("generation 2"), HasSubstr("generation 1")));
  auto writer = newer.BeginCheckpoint(20);
  ASSERT_TRUE(writer.ok()) << writer.status();
  WriteRaw(*(*writer)->ShardPath("ps-0.rec"), "newer");

  // The older one's commit is refused and its abandoned writer leaves the newer save alone.
  EXPECT_EQ((*stale_writer)->Commit(nlohmann::json::object(), {}).code(),
            absl::StatusCode::kFailedPrecondition);
  stale_writer->reset();
  EXPECT_EQ(ReadFile(CkptDir(dir, 20) + "/ps-0.rec"), "newer");
  writer->reset();
  ASSERT_TRUE(Save(newer, 40).ok());
  EXPECT_THAT(Steps(newer, /*committed_only=*/false), ElementsAre(10, 40));
  EXPECT_EQ(LatestStep(newer), 40);

  // A coordinator without generation after one with: refused too, naming the file.
  const absl::Status unversioned = CheckpointStore(dir.path(), 3).Claim();
  EXPECT_EQ(unversioned.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(unversioned.message()), HasSubstr(kStoreGenerationFileName));
}

TEST(CheckpointStoreTest, AnIncompleteSaveOfANewerGenerationIsNotReplaced) {
  testing::TempDir dir;
  CheckpointStore newer(dir.path(), 3, 7);
  auto writer = newer.BeginCheckpoint(5);
  ASSERT_TRUE(writer.ok());
  // Its store marker lost (another volume layout, a manual copy): the writer's own mark remains.
  std::filesystem::remove(dir.Join(kStoreGenerationFileName));
  const absl::Status replaced = CheckpointStore(dir.path(), 3, 6).BeginCheckpoint(5).status();
  EXPECT_EQ(replaced.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(replaced.message()),
              HasSubstr("being written by coordinator generation 7"));
  EXPECT_TRUE(std::filesystem::exists(CkptDir(dir, 5)));
}

TEST(CheckpointStoreTest, CommitRefusesShardsThatDoNotMatchTheirDigest) {
  testing::TempDir dir;
  CheckpointStore store(dir.path(), 3);
  auto writer = store.BeginCheckpoint(1);
  ASSERT_TRUE(writer.ok());
  WriteRaw(*(*writer)->ShardPath("ps-0.rec"), "12345");

  const absl::Status wrong_size =
      (*writer)->Commit(nlohmann::json::object(), {{"ps-0.rec", FileDigest{4, 0}}});
  EXPECT_EQ(wrong_size.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(wrong_size.message()), HasSubstr("ps-0.rec"));
  const absl::Status missing =
      (*writer)->Commit(nlohmann::json::object(), {{"ps-9.rec", FileDigest{4, 0}}});
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.message()), HasSubstr("ps-9.rec"));
  EXPECT_FALSE(std::filesystem::exists(CkptDir(dir, 1) + "/MANIFEST.json"));
}

TEST(CheckpointStoreTest, BadInputIsRefused) {
  testing::TempDir dir;
  CheckpointStore store(dir.path(), 3);
  EXPECT_EQ(store.BeginCheckpoint(-1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.BeginCheckpoint(kMaxCheckpointStep + 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto writer = store.BeginCheckpoint(kMaxCheckpointStep);
  ASSERT_TRUE(writer.ok());
  for (const char* name : {"", "../x", "a/b", ".hidden", "MANIFEST.json", "sp ace"}) {
    EXPECT_EQ((*writer)->ShardPath(name).status().code(), absl::StatusCode::kInvalidArgument)
        << name;
  }
  EXPECT_EQ((*writer)->Commit(nlohmann::json::array(), {}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*writer)->Commit({{"bad", std::string("\xff\xfe")}}, {}).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE((*writer)->Commit({{"ok", true}}, {}).ok());
  EXPECT_EQ((*writer)->Commit({{"ok", true}}, {}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(LatestStep(store), kMaxCheckpointStep);
}

}  // namespace
}  // namespace tj
