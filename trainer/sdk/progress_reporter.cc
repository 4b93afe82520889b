#include "trainer/sdk/progress_reporter.h"

#include <spdlog/spdlog.h>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/checkpoint/atomic_file.h"

namespace tj::sdk {

void ProgressReporter::WriteLocked() {
  progress_.updated = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
  if (path_.empty()) return;
  absl::Status status = WriteFileAtomically(path_, v1alpha1::ToJson(progress_).dump() + "\n");
  if (!status.ok() && !write_failed_) {
    spdlog::warn("cannot write the progress file {}: {} (training goes on)", path_,
                 status.ToString());
    write_failed_ = true;
  }
}

}  // namespace tj::sdk
