// Where a parameter server may write and read checkpoint shards: only inside the job's checkpoint
// directory (TJ_CHECKPOINT_DIR, as tj-train and the operator pass it to every replica), so a
// SaveShard or RestoreShard naming any other file is refused whoever sends it. Without a
// directory, a PS of a protected job (one with a token) takes no shard paths at all; an open one
// (started by hand, in-process tests) takes any path, as before.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tj {

// The checkpoint directory from TJ_CHECKPOINT_DIR, loaded once; nullopt when unset. Tests replace
// it.
const std::optional<std::string>& ShardPathRoot();
void SetShardPathRootForTesting(std::optional<std::string> root);

// OK when `path` stays inside `root` once `..` and symbolic links are resolved as far as the
// path exists: InvalidArgument for an empty path or one with a `..` component, PermissionDenied
// for one outside the root (through a symbolic link too). Both name the path and the root.
absl::Status CheckPathWithin(absl::string_view root, absl::string_view path);

// CheckPathWithin(ShardPathRoot(), path), with the rules above when there is no root.
absl::Status CheckShardPath(absl::string_view path);

}  // namespace tj
