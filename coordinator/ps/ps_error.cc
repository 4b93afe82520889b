#include "coordinator/ps/ps_error.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "coordinator/base/strings.h"

namespace tj {
absl::Status PsUnavailableError(int ps_task, std::string_view address, std::string_view detail) {
  const std::string where = address.empty() ? std::string() : absl::StrCat(" at ", AbslView(address));
  absl::Status status = absl::UnavailableError(absl::StrCat(
      "parameter server /job:ps/task:", ps_task, where, " unavailable: ", AbslView(detail)));
  status.SetPayload(AbslView(kPsTaskPayloadUrl), absl::Cord(absl::StrCat(ps_task)));
  return status;
}

std::optional<int> PsTaskOf(const absl::Status& status) {
  const absl::optional<absl::Cord> payload = status.GetPayload(AbslView(kPsTaskPayloadUrl));
  if (!payload.has_value()) return std::nullopt;
  int task = 0;
  // A payload we cannot parse did not come from PsUnavailableError; do not guess a task from it.
  if (!absl::SimpleAtoi(std::string(*payload), &task)) return std::nullopt;
  return task;
}

}  // namespace tj
