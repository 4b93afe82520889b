#include "coordinator/checkpoint/object_generation_claim.h"

#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "coordinator/base/status_macros.h"

namespace tj {
namespace {

// "<decimal>\n": the directory claim file's format, so a copied prefix reads the same.
constexpr uint64_t kMaxClaimBytes = 64;
// Each lost swap means another coordinator claimed in between; a handful of those in a row is a
// storm of restarts, not something to spin on.
constexpr int kMaxClaimAttempts = 8;

uint64_t ParseGeneration(std::string_view text) {
  uint64_t generation = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size())),
                        &generation))
    return 0;
  return generation;
}

}  // namespace

absl::StatusOr<uint64_t> ReadClaimedGeneration(ObjectStore& store, std::string_view key) {
  TJ_ASSIGN_OR_RETURN(const std::optional<TaggedObject> claim,
                      store.GetTagged(key, kMaxClaimBytes));
  return claim.has_value() ? ParseGeneration(claim->data) : 0;
}

absl::Status ClaimGeneration(ObjectStore& store, std::string_view key, uint64_t generation) {
  const std::string text = absl::StrCat(generation, "\n");
  for (int attempt = 0; attempt < kMaxClaimAttempts; ++attempt) {
    absl::StatusOr<std::optional<TaggedObject>> claim = store.GetTagged(key, kMaxClaimBytes);
    if (absl::IsDataLoss(claim.status())) {
      // Too large to be a claim: not ours to overwrite.
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint location claim ", claim.status().message(),
          ": not a coordinator generation; remove it to let coordinators claim the location"));
    }
    std::optional<std::string> etag;
    uint64_t newest = 0;
    TJ_RETURN_IF_ERROR(claim.status());
    if (claim->has_value()) {
      if ((*claim)->etag.empty()) {
        return absl::InternalError(
            absl::StrCat(store.Describe(key), ": read without an ETag, so it cannot be swapped"));
      }
      etag = (*claim)->etag;
      newest = ParseGeneration((*claim)->data);
    }
    if (newest > generation) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint location claim ", store.Describe(key), " holds coordinator generation ",
          newest, ", newer than this coordinator's generation ", generation,
          ": a newer coordinator took over"));
    }
    if (newest == generation && (etag.has_value() || generation == 0)) return absl::OkStatus();
    const absl::Status swapped = store.PutIfUnchanged(key, text, etag);
    if (!absl::IsAborted(swapped)) return swapped;
    // Another coordinator's claim landed between the read and the write: see whose it is.
  }
  return absl::AbortedError(absl::StrCat(
      "checkpoint location claim ", store.Describe(key), ": changed by other coordinators ",
      kMaxClaimAttempts, " times in a row while generation ", generation, " tried to claim it"));
}

}  // namespace tj
