// Where `tjctl run` finds a container's command[0] on this machine: a path with a slash is used as
// written (relative to the current directory), a bare name is looked up first where FindBinary
// looks for the project's binaries ($TJ_BIN_DIR, then next to tjctl: tj-train, tj-worker, tj-ps),
// then on $PATH. There is no image, hence no image entrypoint and no image filesystem.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace tj::local {

// The absolute path of an executable file, or NotFound saying where it was looked for.
absl::StatusOr<std::string> ResolveExecutable(const std::string& command);

}  // namespace tj::local
