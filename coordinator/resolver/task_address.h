// Validation of the "host:port" strings a ClusterSpec holds. Addresses are checked when a spec is
// built so that a typo in TF_CONFIG fails at startup with the field named, rather than later as a
// peer that never answers.
#pragma once

#include <string_view>

#include "absl/status/status.h"

namespace tj {

// OK for "host:port" and "[ipv6]:port" with a decimal port in 1-65535 and printable-ASCII host.
// The InvalidArgument message describes the problem but not the field; callers add that.
absl::Status ValidateTaskAddress(std::string_view address);

}  // namespace tj
