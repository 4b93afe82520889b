#include "coordinator/checkpoint/checkpoint_location.h"

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/checkpoint/object_checkpoint_store.h"
#include "coordinator/checkpoint/s3_object_store.h"

namespace tj {
namespace {

class DirectorySave : public CheckpointSave {
 public:
  explicit DirectorySave(std::unique_ptr<CheckpointWriter> writer) : writer_(std::move(writer)) {}
  const std::string& dir() const override { return writer_->dir(); }
  absl::StatusOr<std::string> ShardPath(std::string_view name) const override {
    return writer_->ShardPath(name);
  }
  absl::Status Commit(const nlohmann::json& state, const std::map<std::string, FileDigest>& shards,
                      const std::vector<ManifestShard>& earlier) override {
    return writer_->Commit(state, shards, earlier);
  }

 private:
  std::unique_ptr<CheckpointWriter> writer_;
};

class DirectoryLocation : public CheckpointLocation {
 public:
  DirectoryLocation(std::string dir, int keep, uint64_t generation)
      : store_(std::move(dir), keep, generation) {}
  CheckpointLocationKind kind() const override { return CheckpointLocationKind::kDirectory; }
  const std::string& dir() const override { return store_.dir(); }
  absl::Status Claim() override { return store_.Claim(); }
  absl::StatusOr<std::unique_ptr<CheckpointSave>> BeginCheckpoint(int64_t step) override {
    TJ_ASSIGN_OR_RETURN(std::unique_ptr<CheckpointWriter> writer, store_.BeginCheckpoint(step));
    return std::make_unique<DirectorySave>(std::move(writer));
  }
  absl::StatusOr<std::optional<Checkpoint>> LatestValid(ShardCheck check,
                                                        int64_t before_step) override {
    return store_.LatestValid(check, before_step);
  }

 private:
  CheckpointStore store_;
};

class S3Save : public CheckpointSave {
 public:
  S3Save(std::unique_ptr<ObjectCheckpointWriter> writer, std::string dir)
      : writer_(std::move(writer)), dir_(std::move(dir)) {}
  const std::string& dir() const override { return dir_; }
  absl::StatusOr<std::string> ShardPath(std::string_view name) const override {
    TJ_RETURN_IF_ERROR(CheckShardName(name));
    return absl::StrCat(dir_, "/", std::string(name));
  }
  absl::Status Commit(const nlohmann::json& state, const std::map<std::string, FileDigest>& shards,
                      const std::vector<ManifestShard>& earlier) override {
    return writer_->Commit(state, shards, earlier);
  }

 private:
  std::unique_ptr<ObjectCheckpointWriter> writer_;
  const std::string dir_;
};

class BucketLocation : public CheckpointLocation {
 public:
  BucketLocation(std::unique_ptr<S3ObjectStore> objects, const S3Location& location, int keep,
                 uint64_t generation)
      : objects_(std::move(objects)),
        url_(location.Url()),
        store_(*objects_, url_, location.prefix, keep, generation) {}
  CheckpointLocationKind kind() const override { return CheckpointLocationKind::kS3; }
  const std::string& dir() const override { return url_; }
  absl::Status Claim() override {
    TJ_RETURN_IF_ERROR(objects_->CheckAccess());
    return store_.Claim();
  }
  absl::StatusOr<std::unique_ptr<CheckpointSave>> BeginCheckpoint(int64_t step) override {
    TJ_ASSIGN_OR_RETURN(std::unique_ptr<ObjectCheckpointWriter> writer,
                        store_.BeginCheckpoint(step));
    std::string dir = store_.StepUrl(step);
    return std::make_unique<S3Save>(std::move(writer), std::move(dir));
  }
  absl::StatusOr<std::optional<Checkpoint>> LatestValid(ShardCheck check,
                                                        int64_t before_step) override {
    return store_.LatestValid(check, before_step);
  }

 private:
  std::unique_ptr<S3ObjectStore> objects_;
  const std::string url_;
  ObjectCheckpointStore store_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CheckpointLocation>> OpenCheckpointLocation(std::string dir,
                                                                           int keep,
                                                                           uint64_t generation) {
  if (!IsS3Location(dir)) {
    return std::make_unique<DirectoryLocation>(std::move(dir), keep, generation);
  }
  S3Location location;
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<S3ObjectStore> objects, OpenS3ObjectStore(dir, &location));
  return std::make_unique<BucketLocation>(std::move(objects), location, keep, generation);
}

}  // namespace tj
