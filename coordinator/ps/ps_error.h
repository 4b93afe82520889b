// How a parameter-server client reports that its PS task cannot be reached. The worker runtime
// reads the task back with PsTaskOf to tell a lost PS (restart from the checkpoint) from an
// application error (fail the closure).
#pragma once

#include <optional>
#include <string_view>

#include "absl/status/status.h"

namespace tj {

// Type URL of the payload that marks a status as "this PS task is unreachable". Its value is the
// task index in decimal.
inline constexpr std::string_view kPsTaskPayloadUrl = "tj.dev/ps_task";

// An Unavailable status naming the task and address, carrying the kPsTaskPayloadUrl payload.
// `address` may be empty when the caller does not know it.
absl::Status PsUnavailableError(int ps_task, std::string_view address, std::string_view detail);

// The PS task a status blames, or nullopt for statuses that are not PS connectivity failures.
std::optional<int> PsTaskOf(const absl::Status& status);

}  // namespace tj
