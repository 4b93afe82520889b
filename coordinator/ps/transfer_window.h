// Runs many RPCs of one logical call (the slices of a pull or push) in parallel with a bounded
// number of bytes in flight, so that moving a variable of any size holds at most the window in
// gRPC's buffers, whatever the model size. Calls are started from the caller's thread and their
// completions are finished there too (decoding a pull's answer), one at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "absl/status/status.h"

namespace tj {

using WindowDone = std::function<void(absl::Status)>;

// Starts call i with start(i, done) once its bytes fit in `max_bytes_in_flight` (a call larger
// than the window runs alone); when its done runs, finish(i, status) is called on this thread and
// gives the call's final status. After the first error no new call is started; the ones in flight
// are waited for. Returns OK or one error: a PS connectivity failure first (the runtime's fault
// handling keys on it), else the error of the lowest call index.
absl::Status RunWindowed(std::span<const int64_t> bytes, int64_t max_bytes_in_flight,
                         const std::function<void(size_t, WindowDone)>& start,
                         const std::function<absl::Status(size_t, absl::Status)>& finish);

}  // namespace tj
