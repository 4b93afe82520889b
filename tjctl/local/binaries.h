// Where tjctl finds the job binaries (tj-worker, tj-ps): next to its own executable, as the build puts
// every binary in one bin/ directory, or in $TJ_BIN_DIR.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace tj::local {

absl::StatusOr<std::string> FindBinary(const std::string& name);

}  // namespace tj::local
