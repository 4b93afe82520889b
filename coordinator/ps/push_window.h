// Bounds the bytes of Push bodies a parameter server receives at once. Each worker keeps at most
// its transfer window in flight, but nothing bounded what many workers pushing together made a PS
// receive: gRPC holds every arriving body in full. A Push handler asks the window for the body's
// size (the client's `tj-push-bytes` header) before it reads the body; until then the transport
// holds at most the stream's flow-control window of it. A push that is not admitted within its
// hold time is answered RESOURCE_EXHAUSTED with the `tj-push-held-back` trailer, having read and
// applied nothing, and the client sends it again (PsClient): held back, never failed nor taken for
// a lost PS.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <list>
#include <optional>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "coordinator/base/std_mutex.h"

namespace tj {

// The request header that carries a push body's size in bytes, and the trailer of a push held
// back.
inline constexpr std::string_view kPushBytesHeader = "tj-push-bytes";
inline constexpr std::string_view kPushHeldBackTrailer = "tj-push-held-back";

// The default window of a PS whose memory budget (available memory less headroom, as PsServer
// reads it at start) is `budget_bytes`: an eighth of it, within [64 MiB, 512 MiB]; 256 MiB when
// the budget is unknown (0). docs/sizing.md.
int64_t PushWindowBytesFor(int64_t budget_bytes);
// TJ_PS_PUSH_WINDOW_BYTES (bytes; 0: no bound), else PushWindowBytesFor(this process's budget).
int64_t PushWindowBytesFromEnvironment();

// The gRPC memory a PS with push window `window_bytes` allows by default (a grpc::ResourceQuota on
// its server): the window, for the bodies it admits, plus as much again and at least 64 MiB for
// everything else gRPC receives (each connection's read buffers, unread streams, other calls).
// Under its pressure gRPC reads each connection in small pieces instead of keeping a read buffer of
// up to a few MiB per connected worker; beyond it gRPC cancels streams ("Buffers full"), which a
// push client takes as held back. 0 (no bound) when the window is 0. docs/sizing.md.
int64_t GrpcMemoryBytesFor(int64_t window_bytes);
// TJ_PS_GRPC_MEMORY_BYTES (bytes; 0: no bound), else GrpcMemoryBytesFor(window_bytes).
int64_t GrpcMemoryBytesFromEnvironment(int64_t window_bytes);
// The largest push a PS admits when gRPC may hold `grpc_memory_bytes` and the window is
// `window_bytes`: what the quota leaves beside a full window (a push larger than the window is
// admitted alone, but gRPC must still hold it beside the other connections' buffers). -1: no
// bound.
int64_t LargestPushBytes(int64_t grpc_memory_bytes, int64_t window_bytes);

class PushWindow {
 public:
  // `capacity_bytes` <= 0: no bound (every push is admitted at once).
  explicit PushWindow(int64_t capacity_bytes) : capacity_(capacity_bytes) {}
  PushWindow(const PushWindow&) = delete;
  PushWindow& operator=(const PushWindow&) = delete;

  // Bytes admitted; given back when destroyed.
  class Ticket {
   public:
    Ticket(Ticket&& other) noexcept;
    Ticket& operator=(Ticket&&) = delete;
    ~Ticket();

   private:
    friend class PushWindow;
    Ticket(PushWindow* window, int64_t bytes) : window_(window), bytes_(bytes) {}
    PushWindow* window_;
    int64_t bytes_;
  };

  // Waits, first come first served, until `bytes` fit beside what is admitted (a body larger than
  // the capacity waits until it is alone), or until `deadline`: nullopt then.
  std::optional<Ticket> Admit(int64_t bytes, absl::Time deadline);

  int64_t capacity() const { return capacity_; }
  // The most bytes admitted at once so far, and how many pushes were not admitted in time.
  int64_t peak_bytes() const;
  int64_t held_back() const;
  // Pushes waiting for room now.
  int waiting() const;

 private:
  void Release(int64_t bytes);

  const int64_t capacity_;
  // std primitives, visible to TSan (docs/decisions.md).
  mutable StdMutex mu_;
  std::condition_variable changed_;  // an admission ended, or the first waiter left
  int64_t admitted_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t held_back_ ABSL_GUARDED_BY(mu_) = 0;
  // The pushes waiting, in arrival order: only the first may be admitted.
  std::list<uint64_t> waiting_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tj
