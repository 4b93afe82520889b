// A checkpoint's manifest (JSON with a content checksum) as the coordinator reads it to resume.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "coordinator/checkpoint/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<tj::Manifest> manifest = tj::ParseManifest(text);
  // What parses serializes again, to what parses to the same.
  if (manifest.ok()) {
    absl::StatusOr<std::string> again = tj::SerializeManifest(*manifest);
    if (!again.ok() || !tj::ParseManifest(*again).ok()) __builtin_trap();
  }
  return 0;
}
