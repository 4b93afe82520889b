#include "coordinator/checkpoint/newest_checkpoint.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "coordinator/checkpoint/manifest.h"
#include "spdlog/spdlog.h"

namespace tj {

absl::StatusOr<std::optional<Checkpoint>> NewestLoadableCheckpoint(
    const std::vector<CheckpointListing>& listings, int64_t before_step, std::string_view where,
    const std::function<absl::StatusOr<Checkpoint>(int64_t step)>& load,
    const std::function<bool(const absl::Status&)>& falls_back) {
  std::vector<std::string> failures;
  for (auto it = listings.rbegin(); it != listings.rend(); ++it) {
    if (it->step >= before_step) continue;
    if (!it->committed) {
      spdlog::info("checkpoint {}: ignored: no {} (a save that did not finish)", it->dir,
                   kManifestFileName);
      continue;
    }
    absl::StatusOr<Checkpoint> checkpoint = load(it->step);
    if (checkpoint.ok()) return std::optional<Checkpoint>(*std::move(checkpoint));
    if (!falls_back(checkpoint.status())) return checkpoint.status();
    spdlog::warn("checkpoint {}: skipped, falling back to the previous one: {}", it->dir,
                 std::string(checkpoint.status().message()));
    failures.emplace_back(checkpoint.status().message());
  }
  if (failures.empty()) return std::nullopt;
  return absl::DataLossError(absl::StrCat("no valid checkpoint in ", std::string(where), ": ",
                                          absl::StrJoin(failures, "; ")));
}

}  // namespace tj
