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
  const WindowStage stage{start, finish};
  return RunStaged(bytes, max_bytes_in_flight, {&stage, 1});
}

absl::Status RunStaged(std::span<const int64_t> bytes, int64_t max_bytes_in_flight,
                       std::span<const WindowStage> stages) {
  // Completions (item, stage, status), handed from gRPC's threads to this one. The callback
  // signals while holding the lock, so once this thread has seen the last completion it can
  // destroy the state without racing a callback still inside it.
  struct Completion {
    size_t item;
    size_t stage;
    absl::Status status;
  };
  struct Completions {
    StdMutex mu;
    std::condition_variable changed;
    std::deque<Completion> done ABSL_GUARDED_BY(mu);
  } completions;
  // Per stage: the items ready for it, in order, and its calls and bytes in flight. Every item
  // is ready for the first stage, in item order.
  struct Stage {
    std::deque<size_t> ready;
    size_t in_flight = 0;
    int64_t bytes_in_flight = 0;
  };
  std::vector<Stage> state(stages.size());
  if (!stages.empty()) {
    for (size_t i = 0; i < bytes.size(); ++i) state[0].ready.push_back(i);
  }

  std::optional<absl::Status> unavailable;
  std::optional<std::pair<size_t, absl::Status>> first_error;
  size_t in_flight = 0;
  for (;;) {
    for (size_t s = 0; s < stages.size() && !first_error.has_value(); ++s) {
      Stage& stage = state[s];
      while (!stage.ready.empty() &&
             (stage.in_flight == 0 ||
              stage.bytes_in_flight + bytes[stage.ready.front()] <= max_bytes_in_flight)) {
        const size_t i = stage.ready.front();
        stage.ready.pop_front();
        ++stage.in_flight;
        ++in_flight;
        stage.bytes_in_flight += bytes[i];
        stages[s].start(i, [i, s, &completions](absl::Status status) {
          StdMutexLock lock(completions.mu);
          completions.done.push_back(Completion{i, s, std::move(status)});
          completions.changed.notify_all();
        });
      }
    }
    if (in_flight == 0) break;  // all done, or an error stopped the starts and nothing is left
    Completion done;
    {
      StdMutexLock lock(completions.mu);
      while (completions.done.empty()) completions.changed.wait(lock.native());
      done = std::move(completions.done.front());
      completions.done.pop_front();
    }
    --in_flight;
    --state[done.stage].in_flight;
    state[done.stage].bytes_in_flight -= bytes[done.item];
    absl::Status status = stages[done.stage].finish(done.item, std::move(done.status));
    if (status.ok()) {
      if (done.stage + 1 < stages.size()) state[done.stage + 1].ready.push_back(done.item);
      continue;
    }
    if (PsTaskOf(status).has_value()) {
      if (!unavailable.has_value()) unavailable = status;
    } else if (!first_error.has_value() || done.item < first_error->first) {
      first_error.emplace(done.item, std::move(status));
    }
    if (!first_error.has_value()) first_error.emplace(done.item, *unavailable);
  }
  if (unavailable.has_value()) return *unavailable;
  return first_error.has_value() ? first_error->second : absl::OkStatus();
}

}  // namespace tj
