#include "coordinator/ps/transfer_window.h"

#include <condition_variable>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"
#include "coordinator/ps/ps_error.h"

namespace tj {

absl::Status RunWindowed(std::span<const int64_t> bytes, int64_t max_bytes_in_flight,
                         const std::function<void(size_t, WindowDone)>& start,
                         const std::function<absl::Status(size_t, absl::Status)>& finish) {
  // Completions, handed from gRPC's threads to this one. The callback signals while holding the
  // lock, so once this thread has seen the last completion it can destroy the state without
  // racing a callback still inside it.
  struct Completions {
    StdMutex mu;
    std::condition_variable changed;
    std::deque<std::pair<size_t, absl::Status>> done ABSL_GUARDED_BY(mu);
  } completions;

  std::optional<absl::Status> unavailable;
  std::optional<std::pair<size_t, absl::Status>> first_error;
  size_t next = 0;
  size_t in_flight = 0;
  int64_t bytes_in_flight = 0;
  while (next < bytes.size() || in_flight > 0) {
    while (next < bytes.size() && !first_error.has_value() &&
           (in_flight == 0 || bytes_in_flight + bytes[next] <= max_bytes_in_flight)) {
      const size_t i = next++;
      ++in_flight;
      bytes_in_flight += bytes[i];
      start(i, [i, &completions](absl::Status status) {
        StdMutexLock lock(completions.mu);
        completions.done.emplace_back(i, std::move(status));
        completions.changed.notify_all();
      });
    }
    if (in_flight == 0) break;  // an error stopped the starts and nothing is left
    std::pair<size_t, absl::Status> done;
    {
      StdMutexLock lock(completions.mu);
      while (completions.done.empty()) completions.changed.wait(lock.native());
      done = std::move(completions.done.front());
      completions.done.pop_front();
    }
    --in_flight;
    bytes_in_flight -= bytes[done.first];
    absl::Status status = finish(done.first, std::move(done.second));
    if (status.ok()) continue;
    if (PsTaskOf(status).has_value()) {
      if (!unavailable.has_value()) unavailable = status;
    } else if (!first_error.has_value() || done.first < first_error->first) {
      first_error.emplace(done.first, std::move(status));
    }
    if (!first_error.has_value()) first_error.emplace(done.first, *unavailable);
  }
  if (unavailable.has_value()) return *unavailable;
  return first_error.has_value() ? first_error->second : absl::OkStatus();
}

}  // namespace tj
