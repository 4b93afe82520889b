#include "coordinator/ps/checkpoint_path.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "coordinator/base/job_token.h"
#include "coordinator/base/process_slot.h"

namespace tj {
namespace {

namespace fs = std::filesystem;

constexpr char kCheckpointDirEnv[] = "TJ_CHECKPOINT_DIR";  // v1alpha1::env::kCheckpointDir

ProcessSlot<std::optional<std::string>>& RootSlot() {
  static ProcessSlot<std::optional<std::string>> slot;
  return slot;
}

// `inner` is `outer` or below it; both absolute and normal.
bool IsWithin(const fs::path& outer, const fs::path& inner) {
  auto o = outer.begin();
  auto i = inner.begin();
  for (; o != outer.end(); ++o, ++i) {
    if (o->empty()) continue;  // the empty last element of a path ending in '/'
    if (i == inner.end() || *o != *i) return false;
  }
  return true;
}

}  // namespace

const std::optional<std::string>& ShardPathRoot() {
  return RootSlot().Get([] {
    const char* dir = std::getenv(kCheckpointDirEnv);
    return dir != nullptr && *dir != '\0' ? std::optional<std::string>(dir) : std::nullopt;
  });
}

void SetShardPathRootForTesting(std::optional<std::string> root) {
  RootSlot().Set(std::move(root));
}

absl::Status CheckPathWithin(absl::string_view root_text, absl::string_view path_text) {
  if (path_text.empty()) return absl::InvalidArgumentError("shard path: empty");
  const fs::path path{std::string(path_text)};
  for (const fs::path& part : path) {
    if (part == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat("shard path ", path_text, ": a \"..\" component is not allowed"));
    }
  }
  std::error_code error;
  const fs::path root = fs::weakly_canonical(fs::absolute(std::string(root_text)), error);
  if (error) {
    return absl::InternalError(
        absl::StrCat("checkpoint directory ", root_text, ": ", error.message()));
  }
  // Symbolic links in the existing part of the path are resolved, so a link inside the directory
  // that points out of it is caught here rather than followed by the write or read.
  const fs::path resolved = fs::weakly_canonical(fs::absolute(path), error);
  if (error) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard path ", path_text, ": ", error.message()));
  }
  if (!IsWithin(root, resolved) || resolved == root) {
    return absl::PermissionDeniedError(absl::StrCat(
        "shard path ", path_text, " is outside the checkpoint directory ", root_text,
        resolved != path ? absl::StrCat(" (it resolves to ", resolved.native(), ")") : ""));
  }
  return absl::OkStatus();
}

absl::Status CheckShardPath(absl::string_view path) {
  const std::optional<std::string>& root = ShardPathRoot();
  if (root.has_value()) return CheckPathWithin(*root, path);
  if (JobToken().has_value() || JobVerifiers().has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("shard path ", path, ": this parameter server has no checkpoint directory (",
                     kCheckpointDirEnv, " unset), so it writes and reads no shards"));
  }
  return absl::OkStatus();
}

}  // namespace tj
