#include "coordinator/checkpoint/object_checkpoint_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/checkpoint/newest_checkpoint.h"
#include "coordinator/checkpoint/object_generation_claim.h"
#include "coordinator/checkpoint/object_transfer.h"
#include "coordinator/checkpoint/retention.h"
#include "spdlog/spdlog.h"

namespace tj {
namespace {

constexpr std::string_view kStepPrefix = "ckpt-";
constexpr size_t kStepDigits = 12;
constexpr uint64_t kMaxManifestBytes = 64 << 20;  // as CheckpointStore's

// The step of a "ckpt-<12 digits>" name (CheckpointStore's directory names), or -1.
int64_t StepOf(std::string_view name) {
  if (name.size() != kStepPrefix.size() + kStepDigits || !name.starts_with(kStepPrefix)) return -1;
  int64_t step = 0;
  for (const char c : name.substr(kStepPrefix.size())) {
    if (c < '0' || c > '9') return -1;
    step = step * 10 + (c - '0');
  }
  return step;
}

std::string NormalizedPrefix(std::string prefix) {
  if (!prefix.empty() && !prefix.ends_with('/')) prefix.push_back('/');
  return prefix;
}

}  // namespace

ObjectCheckpointStore::ObjectCheckpointStore(ObjectStore& store, std::string url,
                                             std::string prefix, int keep, uint64_t generation)
    : store_(store),
      url_(std::move(url)),
      prefix_(NormalizedPrefix(std::move(prefix))),
      keep_(std::max(keep, 1)),
      generation_(generation) {}

std::string ObjectCheckpointStore::ClaimKey() const {
  return absl::StrCat(prefix_, kStoreGenerationFileName);
}

absl::Status ObjectCheckpointStore::Claim() const {
  return ClaimGeneration(store_, ClaimKey(), generation_);
}

uint64_t ObjectCheckpointStore::WriterGeneration(int64_t step) const {
  // Unreadable counts as none: the claim has fenced older writers already, this only spares a
  // newer one's save in progress.
  return ReadClaimedGeneration(store_, Key(step, kWriterGenerationFileName)).value_or(0);
}

std::string ObjectCheckpointStore::StepPrefix(int64_t step) const {
  return absl::StrFormat("%sckpt-%012d/", prefix_, step);
}

std::string ObjectCheckpointStore::StepUrl(int64_t step) const {
  return absl::StrFormat("%s/ckpt-%012d", url_, step);
}

std::string ObjectCheckpointStore::Key(int64_t step, std::string_view name) const {
  return absl::StrCat(StepPrefix(step), std::string(name));
}

absl::StatusOr<std::string> ObjectCheckpointStore::KeyOfPath(std::string_view path) const {
  const std::string base = url_ + "/";
  if (!path.starts_with(base)) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(path), " is not inside checkpoint location ", url_));
  }
  return absl::StrCat(prefix_, std::string(path.substr(base.size())));
}

absl::StatusOr<std::vector<CheckpointListing>> ObjectCheckpointStore::List() const {
  TJ_ASSIGN_OR_RETURN(const std::vector<ObjectInfo> objects, store_.List(prefix_ + "ckpt-"));
  std::map<int64_t, bool> steps;  // step -> has a manifest
  for (const ObjectInfo& object : objects) {
    const std::string_view rest = std::string_view(object.key).substr(prefix_.size());
    const size_t slash = rest.find('/');
    if (slash == std::string_view::npos) continue;
    const int64_t step = StepOf(rest.substr(0, slash));
    if (step < 0) continue;
    steps[step] |= rest.substr(slash + 1) == kManifestFileName;
  }
  std::vector<CheckpointListing> listings;
  for (const auto& [step, committed] : steps) listings.push_back({step, StepUrl(step), committed});
  return listings;
}

absl::StatusOr<Manifest> ObjectCheckpointStore::ReadManifest(int64_t step) const {
  const std::string key = Key(step, kManifestFileName);
  absl::StatusOr<std::string> text = store_.Get(key, kMaxManifestBytes);
  if (absl::IsNotFound(text.status())) {
    return absl::NotFoundError(
        absl::StrCat(store_.Describe(key), ": no manifest (incomplete save)"));
  }
  TJ_RETURN_IF_ERROR(text.status());
  absl::StatusOr<Manifest> manifest = ParseManifest(*text);
  if (!manifest.ok()) {
    return absl::DataLossError(
        absl::StrCat(store_.Describe(key), ": ", manifest.status().message()));
  }
  if (manifest->step != step) {
    return absl::DataLossError(absl::StrCat(store_.Describe(key), ": step mismatch: expected ",
                                            step, ", actual ", manifest->step));
  }
  return manifest;
}

absl::StatusOr<Checkpoint> ObjectCheckpointStore::Load(int64_t step, ShardCheck check) const {
  TJ_ASSIGN_OR_RETURN(Manifest manifest, ReadManifest(step));
  Checkpoint checkpoint{step, StepUrl(step), std::move(manifest.created_time),
                        std::move(manifest.state), std::move(manifest.shards)};
  for (const ManifestShard& shard : checkpoint.shards) {
    TJ_ASSIGN_OR_RETURN(const std::string key, KeyOfPath(checkpoint.FilePath(shard)));
    TJ_ASSIGN_OR_RETURN(const std::optional<uint64_t> size, store_.Size(key));
    if (!size.has_value() || *size != shard.digest.bytes) {
      return absl::DataLossError(absl::StrCat(
          "shard ", store_.Describe(key), ": expected ", ToString(shard.digest), ", actual ",
          size.has_value() ? absl::StrCat(*size, " bytes") : std::string("no such object")));
    }
    if (check == ShardCheck::kSizeOnly) continue;
    TJ_ASSIGN_OR_RETURN(const FileDigest actual, ComputeObjectDigest(store_, key));
    if (actual != shard.digest) {
      return absl::DataLossError(absl::StrCat("shard ", store_.Describe(key), ": expected ",
                                              ToString(shard.digest), ", actual ",
                                              ToString(actual)));
    }
  }
  return checkpoint;
}

absl::StatusOr<std::optional<Checkpoint>> ObjectCheckpointStore::LatestValid(
    ShardCheck check, int64_t before_step) const {
  TJ_ASSIGN_OR_RETURN(const std::vector<CheckpointListing> listings, List());
  return NewestLoadableCheckpoint(
      listings, before_step, url_, [&](int64_t step) { return Load(step, check); },
      // The store itself failing (bucket gone, credentials refused) is not a corrupt checkpoint.
      [](const absl::Status& status) {
        return absl::IsDataLoss(status) || absl::IsNotFound(status);
      });
}

absl::Status ObjectCheckpointStore::RemoveCheckpoint(int64_t step, std::string_view why) const {
  TJ_RETURN_IF_ERROR(store_.Delete(Key(step, kManifestFileName)));
  TJ_ASSIGN_OR_RETURN(const std::vector<ObjectInfo> objects, store_.List(StepPrefix(step)));
  for (const ObjectInfo& object : objects) TJ_RETURN_IF_ERROR(store_.Delete(object.key));
  spdlog::info("checkpoint {}: removed ({})", StepUrl(step), std::string(why));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ObjectCheckpointWriter>> ObjectCheckpointStore::BeginCheckpoint(
    int64_t step) {
  if (step < 0 || step > kMaxCheckpointStep) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint step ", step, " is outside [0, ", kMaxCheckpointStep, "]"));
  }
  // A missing bucket or refused credentials stop the save here, before any shard is sent.
  TJ_RETURN_IF_ERROR(store_.CheckAccess());
  TJ_RETURN_IF_ERROR(Claim());
  TJ_ASSIGN_OR_RETURN(const std::vector<ObjectInfo> leftovers, store_.List(StepPrefix(step)));
  if (!leftovers.empty()) {
    absl::StatusOr<Checkpoint> existing = Load(step);
    if (existing.ok()) {
      return absl::AlreadyExistsError(
          absl::StrCat("checkpoint ", StepUrl(step), " is already committed"));
    }
    const uint64_t writer = WriterGeneration(step);
    if (absl::IsNotFound(existing.status()) && writer > generation_) {
      return absl::FailedPreconditionError(
          absl::StrCat("checkpoint ", StepUrl(step), " is being written by coordinator generation ",
                       writer, ", newer than this coordinator's generation ", generation_));
    }
    TJ_RETURN_IF_ERROR(RemoveCheckpoint(step, absl::IsNotFound(existing.status())
                                                  ? "an unfinished save of the same step"
                                                  : "a corrupt checkpoint of the same step"));
  }
  TJ_RETURN_IF_ERROR(
      store_.Put(Key(step, kWriterGenerationFileName), absl::StrCat(generation_, "\n")));
  return std::unique_ptr<ObjectCheckpointWriter>(new ObjectCheckpointWriter(*this, step));
}

void ObjectCheckpointStore::RemoveStale(int64_t committed_step) const {
  absl::StatusOr<std::vector<CheckpointListing>> listings = List();
  if (!listings.ok()) {
    spdlog::warn("checkpoint retention skipped: {}", std::string(listings.status().message()));
    return;
  }
  const RetentionPlan plan = PlanRetention(*listings, committed_step, keep_,
                                           [this](int64_t step) { return ReadManifest(step); });
  std::vector<RetentionPlan::Removal> removals = plan.beyond_keep;
  for (const int64_t step : plan.unfinished) {
    // A newer coordinator's save in progress is its own to finish or remove.
    if (WriterGeneration(step) <= generation_) {
      removals.push_back({step, "a save that did not finish"});
    }
  }
  for (const auto& [step, why] : removals) {
    if (absl::Status status = RemoveCheckpoint(step, why); !status.ok()) {
      spdlog::warn("checkpoint {}: could not remove ({}): {}", StepUrl(step), why,
                   std::string(status.message()));
    }
  }
}

ObjectCheckpointWriter::~ObjectCheckpointWriter() {
  if (committed_ || committed_by_another_) return;
  // A newer coordinator may have taken the step over: not ours then.
  if (const uint64_t writer = store_.WriterGeneration(step_); writer != store_.generation()) {
    spdlog::warn("checkpoint {}: left in place: now written by coordinator generation {}",
                 store_.StepUrl(step_), writer);
    return;
  }
  if (absl::Status status = store_.RemoveCheckpoint(step_, "save abandoned before commit");
      !status.ok()) {
    spdlog::warn("checkpoint {}: could not remove the abandoned save: {}", store_.StepUrl(step_),
                 std::string(status.message()));
  }
}

absl::StatusOr<std::string> ObjectCheckpointWriter::Key(std::string_view name) const {
  TJ_RETURN_IF_ERROR(CheckShardName(name));
  return store_.Key(step_, name);
}

absl::Status ObjectCheckpointWriter::Commit(const nlohmann::json& state,
                                            const std::map<std::string, FileDigest>& shards,
                                            const std::vector<ManifestShard>& earlier) {
  if (committed_) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint ", store_.StepUrl(step_), " already committed"));
  }
  Manifest manifest;
  manifest.step = step_;
  manifest.created_time = absl::FormatTime(absl::RFC3339_sec, absl::Now(), absl::UTCTimeZone());
  manifest.state = state;
  for (const auto& [name, digest] : shards) {
    TJ_ASSIGN_OR_RETURN(const std::string key, Key(name));
    TJ_ASSIGN_OR_RETURN(const std::optional<uint64_t> size, store_.objects().Size(key));
    if (!size.has_value() || *size != digest.bytes) {
      return absl::FailedPreconditionError(absl::StrCat(
          "shard ", store_.objects().Describe(key), ": the digest says ", digest.bytes,
          " bytes, the object ", size.has_value() ? absl::StrCat("has ", *size) : "is missing"));
    }
    manifest.shards.push_back({name, digest});
  }
  for (const ManifestShard& shard : earlier) {
    if (shard.checkpoint_step < 0 || shard.checkpoint_step >= step_) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", shard.name, " of step ",
                                                     shard.checkpoint_step,
                                                     " is not of an earlier checkpoint"));
    }
    manifest.shards.push_back(shard);
  }
  TJ_ASSIGN_OR_RETURN(const std::string text, SerializeManifest(manifest));
  // A newer coordinator that took over meanwhile owns the location now.
  TJ_RETURN_IF_ERROR(store_.Claim());
  // Where none is: two coordinators never both commit the step (If-None-Match: *).
  if (absl::Status put =
          store_.objects().PutIfUnchanged(store_.Key(step_, kManifestFileName), text, std::nullopt);
      !put.ok()) {
    if (!absl::IsAborted(put)) return put;
    committed_by_another_ = true;
    return absl::FailedPreconditionError(absl::StrCat("checkpoint ", store_.StepUrl(step_),
                                                      ": committed by another coordinator ",
                                                      "meanwhile (", put.message(), ")"));
  }
  committed_ = true;
  spdlog::info("checkpoint {}: committed step {} ({} shards)", store_.StepUrl(step_), step_,
               shards.size());
  store_.RemoveStale(step_);
  return absl::OkStatus();
}

}  // namespace tj
