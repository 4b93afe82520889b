// The checkpoints of one job in an object store (an s3://bucket/prefix location): the same layout
// and rules as CheckpointStore's directories, as keys. `<prefix>/ckpt-<step, 12 digits>/<shard>`
// objects are uploaded by each parameter server, and `<prefix>/ckpt-<step>/MANIFEST.json` is put
// last by the coordinator: a step without a manifest is a save that never finished and is not a
// checkpoint; one whose objects do not match their manifest is skipped for an older one; `keep`
// retention deletes the objects of older checkpoints.
//
// Coordinators are fenced by generation as in CheckpointStore: the claim object
// `<prefix>/COORDINATOR_GENERATION` is raised by compare-and-swap (object_generation_claim.h) and
// refuses older generations; a save in progress records its writer's generation
// (`ckpt-<step>/WRITER_GENERATION`) so nobody older removes it; and a manifest is put only where
// none is (If-None-Match: *), so no coordinator overwrites another's committed checkpoint.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/checkpoint/checkpoint_store.h"
#include "coordinator/checkpoint/object_store.h"

namespace tj {

class ObjectCheckpointWriter;

// Not thread-safe: one coordinator drives saves and restores, one at a time.
class ObjectCheckpointStore {
 public:
  // `url` names the location in logs and in Checkpoint::dir ("s3://bucket/prefix"); keys are
  // `prefix` + "/ckpt-...". `store` must outlive this. `keep` below 1 is taken as 1.
  // `generation`: the coordinator's (0: none, a process started by hand).
  ObjectCheckpointStore(ObjectStore& store, std::string url, std::string prefix, int keep,
                        uint64_t generation = 0);

  const std::string& url() const { return url_; }
  int keep() const { return keep_; }
  ObjectStore& objects() const { return store_; }
  uint64_t generation() const { return generation_; }
  // The claim object's key: `<prefix>/COORDINATOR_GENERATION`.
  std::string ClaimKey() const;

  // Raises the claim to this store's generation (ClaimGeneration); FailedPrecondition naming both
  // generations when a newer coordinator has claimed the location. BeginCheckpoint and Commit
  // claim; a coordinator claims before it restores, so its predecessor stops saving.
  absl::Status Claim() const;

  // The key of `name` in the checkpoint of `step`.
  std::string Key(int64_t step, std::string_view name) const;
  // "<url>/ckpt-<step>": the Checkpoint::dir of `step`, and where its shards' URLs start.
  std::string StepUrl(int64_t step) const;
  // The key of a Checkpoint::FilePath() / ShardPath() of a checkpoint this store loaded.
  absl::StatusOr<std::string> KeyOfPath(std::string_view path) const;

  // Starts the save of `step`: leftover objects of an unfinished (and not being written by a newer
  // generation) or corrupt save of the same step are deleted; a valid committed one is
  // AlreadyExists.
  absl::StatusOr<std::unique_ptr<ObjectCheckpointWriter>> BeginCheckpoint(int64_t step);

  // As CheckpointStore's (Checkpoint::dir is "<url>/ckpt-<step>").
  absl::StatusOr<std::optional<Checkpoint>> LatestValid(ShardCheck check = ShardCheck::kSizeAndCrc,
                                                        int64_t before_step = kMaxCheckpointStep +
                                                                              1) const;
  absl::StatusOr<Checkpoint> Load(int64_t step, ShardCheck check = ShardCheck::kSizeAndCrc) const;
  absl::StatusOr<std::vector<CheckpointListing>> List() const;

 private:
  friend class ObjectCheckpointWriter;
  absl::StatusOr<Manifest> ReadManifest(int64_t step) const;
  void RemoveStale(int64_t committed_step) const;
  // Deletes every object of `step`, the manifest first (a deletion cut short then leaves an
  // unfinished save, not a corrupt-looking checkpoint).
  absl::Status RemoveCheckpoint(int64_t step, std::string_view why) const;
  std::string StepPrefix(int64_t step) const;
  // The generation recorded by the save in progress of `step`; 0 when none is.
  uint64_t WriterGeneration(int64_t step) const;

  ObjectStore& store_;
  const std::string url_;
  const std::string prefix_;  // "" or "a/b/" (with its trailing '/')
  const int keep_;
  const uint64_t generation_;
};

// One save in progress: shard objects go to Key(name) (UploadFile, from any process), Commit()
// puts the manifest.
class ObjectCheckpointWriter {
 public:
  ObjectCheckpointWriter(const ObjectCheckpointWriter&) = delete;
  ObjectCheckpointWriter& operator=(const ObjectCheckpointWriter&) = delete;
  // An uncommitted save's objects are deleted, so a failed attempt leaves nothing behind (unless a
  // newer coordinator has taken the step over: its objects are its own).
  ~ObjectCheckpointWriter();

  int64_t step() const { return step_; }
  absl::StatusOr<std::string> Key(std::string_view name) const;

  // Checks each listed shard object exists with the digest's size, claims the location again (a
  // newer coordinator may have taken over: FailedPrecondition), puts MANIFEST.json where none is
  // (the moment the checkpoint exists), then applies retention. `earlier` as
  // CheckpointWriter::Commit.
  absl::Status Commit(const nlohmann::json& state, const std::map<std::string, FileDigest>& shards,
                      const std::vector<ManifestShard>& earlier = {});

 private:
  friend class ObjectCheckpointStore;
  ObjectCheckpointWriter(const ObjectCheckpointStore& store, int64_t step)
      : store_(store), step_(step) {}

  const ObjectCheckpointStore& store_;
  const int64_t step_;
  bool committed_ = false;
  // Another coordinator's manifest was there first: the step's objects are its checkpoint.
  bool committed_by_another_ = false;
};

}  // namespace tj
