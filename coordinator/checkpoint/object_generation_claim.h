// Generation fencing in an object store (coordinator_generation.h), where there is no rename and
// no lock: the claim is one small object, `<prefix>/COORDINATOR_GENERATION`, holding the newest
// coordinator generation that used the location. A coordinator raises it by compare-and-swap
// (ObjectStore::PutIfUnchanged: If-Match on the ETag it read, If-None-Match: * when there is none
// yet), so concurrent claims are serialised by the server: the claim only ever grows, and an
// older coordinator can never write its generation back over a newer one's. Parameter servers
// read it before every coordinator-only call, as they read a directory's claim file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/checkpoint/object_store.h"

namespace tj {

// The newest generation that claimed the object `key`: 0 when absent or not a number (a claim
// never written whole is no claim; the next claim replaces it). Errors of the store itself
// (bucket gone, credentials refused, endpoint down) are returned, not read as 0.
absl::StatusOr<uint64_t> ReadClaimedGeneration(ObjectStore& store, std::string_view key);

// Raises the claim at `key` to `generation`: OK when it is there already or was raised;
// FailedPrecondition naming both generations and the object when a newer one holds it. A
// concurrent claim that wins the swap is read again (a few times; Aborted if the claim keeps
// moving). Generation 0 (a coordinator started by hand) writes nothing where nothing is claimed.
absl::Status ClaimGeneration(ObjectStore& store, std::string_view key, uint64_t generation);

}  // namespace tj
