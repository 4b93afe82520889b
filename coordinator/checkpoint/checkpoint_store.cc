#include "coordinator/checkpoint/checkpoint_store.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/checkpoint/atomic_file.h"
#include "coordinator/checkpoint/newest_checkpoint.h"
#include "coordinator/checkpoint/posix_file.h"
#include "coordinator/checkpoint/retention.h"
#include "spdlog/spdlog.h"

namespace tj {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kDirPrefix = "ckpt-";
constexpr size_t kStepDigits = 12;
// A manifest lists a handful of shards and a small state; anything this large is not one.
constexpr uintmax_t kMaxManifestBytes = 64 << 20;

std::string DirName(int64_t step) { return absl::StrFormat("ckpt-%012d", step); }

// The step of a directory named ckpt-<12 digits>, or -1.
int64_t StepOf(std::string_view name) {
  if (name.size() != kDirPrefix.size() + kStepDigits || !name.starts_with(kDirPrefix)) return -1;
  int64_t step = 0;
  for (const char c : name.substr(kDirPrefix.size())) {
    if (c < '0' || c > '9') return -1;
    step = step * 10 + (c - '0');
  }
  return step;
}

absl::Status FsError(const std::error_code& error, std::string_view what, std::string_view path) {
  return absl::InternalError(
      absl::StrCat(std::string(what), " ", std::string(path), ": ", error.message()));
}

bool Exists(const std::string& path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  std::error_code error;
  const uintmax_t size = fs::file_size(path, error);
  if (error) return FsError(error, "reading", path);
  if (size > kMaxManifestBytes) {
    return absl::DataLossError(absl::StrCat(path, ": ", size, " bytes, too large for a manifest"));
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream contents;
  contents << in.rdbuf();
  if (!in.good() && !in.eof()) return absl::InternalError(absl::StrCat("reading ", path));
  return std::move(contents).str();
}

// Removes a checkpoint directory, manifest first: a removal cut short by a crash then leaves an
// incomplete directory (ignored, cleaned later) rather than a corrupt-looking checkpoint.
void RemoveCheckpointDir(const std::string& dir, std::string_view why) {
  std::error_code error;
  fs::remove(fs::path(dir) / kManifestFileName, error);
  fs::remove_all(dir, error);
  if (error) {
    spdlog::warn("checkpoint {}: could not remove ({}): {}", dir, why, error.message());
  } else {
    spdlog::info("checkpoint {}: removed ({})", dir, why);
  }
}

// A generation file's number; 0 when it is absent or unreadable (a directory of a coordinator
// without generation, or of an older version).
uint64_t ReadGeneration(const std::string& path) {
  std::ifstream in(path);
  uint64_t generation = 0;
  if (!(in >> generation)) return 0;
  return generation;
}

// Checks one shard against its manifest entry, cheapest test first.
absl::Status VerifyShard(const std::string& path, const FileDigest& expected, ShardCheck check) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) {
    return absl::DataLossError(absl::StrCat("shard ", path, ": ", std::strerror(errno),
                                            " (expected ", ToString(expected), ")"));
  }
  const auto size = static_cast<uint64_t>(info.st_size);
  if (size != expected.bytes) {
    return absl::DataLossError(absl::StrCat("shard ", path, ": size mismatch: expected ",
                                            expected.bytes, " bytes, actual ", size, " bytes"));
  }
  if (check == ShardCheck::kSizeOnly) return absl::OkStatus();
  absl::StatusOr<FileDigest> actual = ComputeFileDigest(path);
  if (!actual.ok()) {
    return absl::DataLossError(absl::StrCat("shard ", path, ": ", actual.status().message()));
  }
  if (actual->crc32c != expected.crc32c) {
    return absl::DataLossError(
        absl::StrFormat("shard %s: crc32c mismatch: expected 0x%08x, actual 0x%08x (%d bytes)",
                        path, expected.crc32c, actual->crc32c, actual->bytes));
  }
  return absl::OkStatus();
}

}  // namespace

std::string Checkpoint::ShardPath(std::string_view name) const {
  return absl::StrCat(dir, "/", std::string(name));
}

std::string Checkpoint::FilePath(const ManifestShard& shard) const {
  if (shard.checkpoint_step < 0) return ShardPath(shard.name);
  return absl::StrCat(fs::path(dir).parent_path().native(), "/", DirName(shard.checkpoint_step),
                      "/", shard.name);
}

CheckpointStore::CheckpointStore(std::string dir, int keep, uint64_t generation)
    : dir_(std::move(dir)), keep_(std::max(keep, 1)), generation_(generation) {}

uint64_t ClaimedGeneration(const std::string& dir) {
  return ReadGeneration(absl::StrCat(dir, "/", kStoreGenerationFileName));
}

absl::Status CheckpointStore::Claim() const {
  const std::string path = absl::StrCat(dir_, "/", kStoreGenerationFileName);
  const uint64_t newest = ReadGeneration(path);
  if (newest > generation_) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint directory ", dir_, " belongs to coordinator generation ", newest,
                     ", newer than this coordinator's generation ", generation_,
                     ": a newer coordinator took over (", path, ")"));
  }
  if (newest == generation_) return absl::OkStatus();
  std::error_code error;
  fs::create_directories(dir_, error);
  if (error) return FsError(error, "creating checkpoint directory", dir_);
  return WriteFileAtomically(path, absl::StrCat(generation_, "\n"));
}

absl::StatusOr<std::vector<CheckpointListing>> CheckpointStore::List() const {
  std::vector<CheckpointListing> listings;
  std::error_code error;
  fs::directory_iterator it(dir_, error);
  if (error == std::errc::no_such_file_or_directory) return listings;
  if (error) return FsError(error, "listing checkpoint directory", dir_);
  for (const fs::directory_entry& entry : it) {
    const int64_t step = StepOf(entry.path().filename().native());
    if (step < 0 || !entry.is_directory(error)) continue;
    const std::string dir = entry.path().native();
    listings.push_back({step, dir, Exists(absl::StrCat(dir, "/", kManifestFileName))});
  }
  std::sort(listings.begin(), listings.end(),
            [](const auto& a, const auto& b) { return a.step < b.step; });
  return listings;
}

absl::StatusOr<Manifest> CheckpointStore::ReadManifest(int64_t step) const {
  const std::string dir = absl::StrCat(dir_, "/", DirName(step));
  const std::string manifest_path = absl::StrCat(dir, "/", kManifestFileName);
  if (!Exists(manifest_path)) {
    return absl::NotFoundError(absl::StrCat(manifest_path, ": no such file (incomplete save)"));
  }
  TJ_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(manifest_path));
  absl::StatusOr<Manifest> manifest = ParseManifest(text);
  if (!manifest.ok()) {
    return absl::DataLossError(absl::StrCat(dir, "/", manifest.status().message()));
  }
  if (manifest->step != step) {
    return absl::DataLossError(absl::StrCat(manifest_path, ": step mismatch: expected ", step,
                                            " (directory name), actual ", manifest->step));
  }
  return manifest;
}

absl::StatusOr<Checkpoint> CheckpointStore::Load(int64_t step, ShardCheck check) const {
  TJ_ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(step));
  Checkpoint checkpoint{step, absl::StrCat(dir_, "/", DirName(step)),
                        std::move(manifest.created_time), std::move(manifest.state),
                        std::move(manifest.shards)};
  // Files of earlier checkpoints too: a delta or full save missing there makes this checkpoint
  // unrestorable (DataLoss naming the file), and LatestValid falls back to the one before.
  for (const ManifestShard& shard : checkpoint.shards) {
    TJ_RETURN_IF_ERROR(VerifyShard(checkpoint.FilePath(shard), shard.digest, check));
  }
  return checkpoint;
}

absl::StatusOr<std::optional<Checkpoint>> CheckpointStore::LatestValid(ShardCheck check,
                                                                      int64_t before_step) const {
  TJ_ASSIGN_OR_RETURN(std::vector<CheckpointListing> listings, List());
  // Any load error is this checkpoint's: the directory itself was just listed.
  return NewestLoadableCheckpoint(
      listings, before_step, dir_, [&](int64_t step) { return Load(step, check); },
      [](const absl::Status&) { return true; });
}

absl::StatusOr<std::unique_ptr<CheckpointWriter>> CheckpointStore::BeginCheckpoint(int64_t step) {
  if (step < 0 || step > kMaxCheckpointStep) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint step ", step, " is outside [0, ", kMaxCheckpointStep, "]"));
  }
  std::error_code error;
  fs::create_directories(dir_, error);
  if (error) return FsError(error, "creating checkpoint directory", dir_);
  TJ_RETURN_IF_ERROR(Claim());
  const std::string dir = absl::StrCat(dir_, "/", DirName(step));
  if (Exists(dir)) {
    absl::StatusOr<Checkpoint> existing = Load(step);
    if (existing.ok()) {
      return absl::AlreadyExistsError(absl::StrCat("checkpoint ", dir, " is already committed"));
    }
    const uint64_t writer = ReadGeneration(absl::StrCat(dir, "/", kWriterGenerationFileName));
    if (absl::IsNotFound(existing.status()) && writer > generation_) {
      return absl::FailedPreconditionError(
          absl::StrCat("checkpoint ", dir, " is being written by coordinator generation ", writer,
                       ", newer than this coordinator's generation ", generation_));
    }
    RemoveCheckpointDir(dir, absl::IsNotFound(existing.status())
                                 ? "an unfinished save of the same step"
                                 : "a corrupt checkpoint of the same step");
    if (Exists(dir)) return absl::InternalError(absl::StrCat("could not remove stale ", dir));
  }
  if (::mkdir(dir.c_str(), 0755) != 0) return ErrnoError(errno, "creating", dir);
  TJ_RETURN_IF_ERROR(WriteFileAtomically(absl::StrCat(dir, "/", kWriterGenerationFileName),
                                         absl::StrCat(generation_, "\n")));
  // The new directory's entry must be durable before a manifest inside it can be.
  TJ_RETURN_IF_ERROR(FsyncDirectory(dir_));
  return std::unique_ptr<CheckpointWriter>(new CheckpointWriter(*this, step, dir));
}

void CheckpointStore::RemoveStale(int64_t committed_step) const {
  absl::StatusOr<std::vector<CheckpointListing>> listings = List();
  if (!listings.ok()) {
    spdlog::warn("checkpoint retention skipped: {}", std::string(listings.status().message()));
    return;
  }
  const RetentionPlan plan = PlanRetention(*listings, committed_step, keep_,
                                           [this](int64_t step) { return ReadManifest(step); });
  std::map<int64_t, std::string> dirs;  // the directory each step was listed under
  for (const CheckpointListing& listing : *listings) dirs[listing.step] = listing.dir;
  for (const int64_t step : plan.kept_for_chains) {
    spdlog::info("checkpoint {}: kept beyond the newest {}: a newer checkpoint builds on it",
                 dirs[step], keep_);
  }
  for (const RetentionPlan::Removal& removal : plan.beyond_keep) {
    RemoveCheckpointDir(dirs[removal.step], removal.why);
  }
  for (const int64_t step : plan.unfinished) {
    // A newer coordinator's save in progress is its own to finish or remove.
    if (ReadGeneration(absl::StrCat(dirs[step], "/", kWriterGenerationFileName)) <= generation_) {
      RemoveCheckpointDir(dirs[step], "a save that did not finish");
    }
  }
}

CheckpointWriter::CheckpointWriter(const CheckpointStore& store, int64_t step, std::string dir)
    : store_(store), step_(step), dir_(std::move(dir)) {}

CheckpointWriter::~CheckpointWriter() {
  if (committed_) return;
  // A newer coordinator may have taken the step over (and replaced the directory): not ours then.
  const uint64_t writer = ReadGeneration(absl::StrCat(dir_, "/", kWriterGenerationFileName));
  if (writer != store_.generation()) {
    if (!Exists(dir_)) return;
    spdlog::warn("checkpoint {}: left in place: now written by coordinator generation {}", dir_,
                 writer);
    return;
  }
  RemoveCheckpointDir(dir_, "save abandoned before commit");
}

absl::StatusOr<std::string> CheckpointWriter::ShardPath(std::string_view name) const {
  TJ_RETURN_IF_ERROR(CheckShardName(name));
  return absl::StrCat(dir_, "/", std::string(name));
}

absl::Status CheckpointWriter::Commit(const nlohmann::json& state,
                                      const std::map<std::string, FileDigest>& shards,
                                      const std::vector<ManifestShard>& earlier) {
  if (committed_) {
    return absl::FailedPreconditionError(absl::StrCat("checkpoint ", dir_, " already committed"));
  }
  Manifest manifest;
  manifest.step = step_;
  manifest.created_time = absl::FormatTime(absl::RFC3339_sec, absl::Now(), absl::UTCTimeZone());
  manifest.state = state;
  for (const auto& [name, digest] : shards) {
    TJ_ASSIGN_OR_RETURN(const std::string path, ShardPath(name));
    struct stat info;
    if (::stat(path.c_str(), &info) != 0) return ErrnoError(errno, "checking shard", path);
    if (static_cast<uint64_t>(info.st_size) != digest.bytes) {
      return absl::FailedPreconditionError(absl::StrCat("shard ", path, ": the digest says ",
                                                        digest.bytes, " bytes, the file has ",
                                                        info.st_size));
    }
    manifest.shards.push_back({name, digest});
  }
  for (const ManifestShard& shard : earlier) {
    if (shard.checkpoint_step < 0 || shard.checkpoint_step >= step_) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", shard.name, " of step ",
                                                     shard.checkpoint_step,
                                                     " is not of an earlier checkpoint"));
    }
    const std::string path = absl::StrCat(store_.dir(), "/", DirName(shard.checkpoint_step), "/",
                                          shard.name);
    struct stat info;
    if (::stat(path.c_str(), &info) != 0) return ErrnoError(errno, "checking shard", path);
    manifest.shards.push_back(shard);
  }
  TJ_ASSIGN_OR_RETURN(const std::string text, SerializeManifest(manifest));
  // A newer coordinator that took over meanwhile owns the directory now.
  TJ_RETURN_IF_ERROR(store_.Claim());
  // Shards written by other processes may not have synced this directory; do it before the
  // manifest can claim they exist.
  TJ_RETURN_IF_ERROR(FsyncDirectory(dir_));
  TJ_RETURN_IF_ERROR(WriteFileAtomically(absl::StrCat(dir_, "/", kManifestFileName), text));
  committed_ = true;
  spdlog::info("checkpoint {}: committed step {} ({} shards)", dir_, step_, shards.size());
  store_.RemoveStale(step_);
  return absl::OkStatus();
}

}  // namespace tj
