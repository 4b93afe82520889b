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

// One stage of a staged run: its calls and what is done on the caller's thread when one ends.
struct WindowStage {
  std::function<void(size_t, WindowDone)> start;
  std::function<absl::Status(size_t, absl::Status)> finish;
};

// Item i goes through `stages` in order (a streamed step: pull slice i, then push its gradient):
// its call of stage s + 1 is started once stage s's finish returned OK, as the items of stage s
// keep arriving. Each stage has a window of its own of `max_bytes_in_flight`, taken in item order
// for the first stage and in order of readiness for the others. The same error rules as
// RunWindowed: after the first error nothing new is started, in-flight calls are waited for.
absl::Status RunStaged(std::span<const int64_t> bytes, int64_t max_bytes_in_flight,
                       std::span<const WindowStage> stages);

}  // namespace tj
