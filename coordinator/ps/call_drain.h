// Admission control for a server's RPC handlers during shutdown: admits calls until closed, then
// lets the server wait for the admitted ones to finish. gRPC's own Shutdown(deadline) also waits
// for every idle client connection to hang up, which workers never do, so every PS shutdown would
// otherwise last its whole grace period.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "coordinator/base/std_mutex.h"

namespace tj {

class CallDrain {
 public:
  // Counts one admitted call for as long as it lives.
  class Admission {
   public:
    Admission(Admission&& other) noexcept : drain_(other.drain_) { other.drain_ = nullptr; }
    Admission& operator=(Admission&&) = delete;
    ~Admission();

   private:
    friend class CallDrain;
    explicit Admission(CallDrain* drain) : drain_(drain) {}
    CallDrain* drain_;
  };

  // An admission, or nullopt once CloseAndDrain has been called.
  std::optional<Admission> Admit();

  // Refuses new calls, then waits until the admitted ones finish or `deadline` passes. Returns the
  // number of calls still running (0 when drained).
  int64_t CloseAndDrain(absl::Time deadline);

 private:
  // std primitives rather than absl::Mutex so that TSan, which cannot see into Debian's
  // uninstrumented Abseil, checks this class.
  StdMutex mu_;
  std::condition_variable finished_;  // signalled when running_ drops to 0
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int64_t running_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tj
