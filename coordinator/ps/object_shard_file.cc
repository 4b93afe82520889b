#include "coordinator/ps/object_shard_file.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/checkpoint/checkpoint_store.h"
#include "coordinator/checkpoint/object_generation_claim.h"
#include "coordinator/checkpoint/object_record_writer.h"
#include "coordinator/checkpoint/object_transfer.h"
#include "coordinator/checkpoint/s3_object_store.h"
#include "spdlog/spdlog.h"

namespace tj {
namespace {

namespace fs = std::filesystem;

// Local files that are removed when they go out of scope, whatever happened.
class ScratchFiles {
 public:
  ScratchFiles() {
    const char* dir = std::getenv("TJ_S3_SCRATCH_DIR");
    std::error_code error;
    dir_ = dir != nullptr && *dir != '\0' ? fs::path(dir) : fs::temp_directory_path(error);
  }
  ~ScratchFiles() {
    std::error_code ignored;
    for (const std::string& path : paths_) fs::remove(path, ignored);
  }
  std::string Next() {
    paths_.push_back((dir_ / absl::StrCat("tj-shard-", ::getpid(), "-", paths_.size(), "-",
                                          reinterpret_cast<uintptr_t>(this)))
                         .native());
    return paths_.back();
  }

 private:
  fs::path dir_;
  std::vector<std::string> paths_;
};

struct ObjectRef {
  std::unique_ptr<S3ObjectStore> store;
  std::string key;
};

absl::StatusOr<ObjectRef> OpenObject(const std::string& path) {
  S3Location location;
  TJ_ASSIGN_OR_RETURN(std::unique_ptr<S3ObjectStore> store, OpenS3ObjectStore(path, &location));
  if (location.prefix.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("shard path ", path, ": no object key"));
  }
  return ObjectRef{std::move(store), std::move(location.prefix)};
}

}  // namespace

uint64_t ClaimedGenerationAnywhere(const std::string& root) {
  if (!IsS3Location(root)) return ClaimedGeneration(root);
  S3Location location;
  absl::StatusOr<std::unique_ptr<S3ObjectStore>> store = OpenS3ObjectStore(root, &location);
  absl::StatusOr<uint64_t> claimed =
      store.ok() ? ReadClaimedGeneration(**store, location.Key(kStoreGenerationFileName))
                 : absl::StatusOr<uint64_t>(store.status());
  if (!claimed.ok()) {
    spdlog::warn("the coordinator claim in {} could not be read: {}", root,
                 std::string(claimed.status().message()));
    return 0;
  }
  return *claimed;
}

absl::StatusOr<v1::SaveShardResponse> SaveShardAnywhere(const VariableStore& store,
                                                        const std::string& path,
                                                        const ShardFileOptions& options) {
  if (!IsS3Location(path)) return SaveShardFile(store, path, options);
  TJ_ASSIGN_OR_RETURN(ObjectRef object, OpenObject(path));
  TJ_ASSIGN_OR_RETURN(ObjectUploadPtr upload, object.store->BeginUpload(object.key));
  // Records go into the upload as they are produced; on any error the writer (and with it the
  // upload) is dropped unfinished, which aborts it.
  ObjectRecordWriter writer(std::move(upload));
  return SaveShardRecords(store, writer, options);
}

absl::StatusOr<v1::RestoreShardResponse> RestoreShardsAnywhere(
    VariableStore& store, const std::vector<std::string>& paths, const ShardFileOptions& options) {
  if (paths.empty() || !IsS3Location(paths.front())) {
    return RestoreShardFiles(store, paths, options);
  }
  ScratchFiles scratch;
  std::vector<std::string> locals;
  for (size_t i = 0; i < paths.size(); ++i) {
    TJ_ASSIGN_OR_RETURN(ObjectRef object, OpenObject(paths[i]));
    std::optional<FileDigest> expected;
    if (i == 0) expected = options.expected_digest;
    if (i > 0 && i - 1 < options.expected_delta_digests.size()) {
      expected = options.expected_delta_digests[i - 1];
    }
    locals.push_back(scratch.Next());
    absl::Status fetched = DownloadFile(*object.store, object.key, locals.back(), expected);
    // A file its manifest lists must be there: missing is corrupt, as RestoreShardFiles says.
    if (absl::IsNotFound(fetched) && expected.has_value()) {
      return absl::DataLossError(fetched.message());
    }
    TJ_RETURN_IF_ERROR(fetched);
  }
  return RestoreShardFiles(store, locals, options);
}

}  // namespace tj
