// RunStreamSession: serves one coordinator's RunStream. The gRPC thread reads batches of closures and
// cancellations; an executor thread runs closures in arrival order, one at a time like a TensorFlow
// worker, and writes results back, batching them while a backlog exists so throughput does not cost
// a lone closure any latency.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_set>

#include <grpcpp/grpcpp.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/base/coordinator_generation.h"
#include "coordinator/worker/closure_runner.h"
#include "tj/v1/worker.grpc.pb.h"

namespace tj {

class RunStreamSession {
 public:
  using Stream = grpc::ServerReaderWriterInterface<v1::ResultBatch, v1::RunBatch>;

  // `fence` (optional): the stream belongs to coordinator `generation` and ends, refused, at the
  // first batch after a newer coordinator was admitted (coordinator_generation.h).
  RunStreamSession(const ClosureRunner* runner, Stream* stream,
                   const GenerationFence* fence = nullptr, uint64_t generation = 0)
      : runner_(runner), stream_(stream), fence_(fence), generation_(generation) {}

  // Returns when the coordinator closes the stream or the connection breaks (OK), or when a newer
  // coordinator took over (FailedPrecondition).
  grpc::Status Serve();

 private:
  void ExecutorLoop();
  void CancelLocked(uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ClosureRunner* runner_;
  Stream* stream_;
  const GenerationFence* const fence_;
  const uint64_t generation_;
  absl::Mutex mu_;
  struct Pending {
    v1::RunRequest request;
    std::chrono::steady_clock::time_point received;
  };
  std::deque<Pending> pending_ ABSL_GUARDED_BY(mu_);
  std::unordered_set<uint64_t> cancelled_pending_ ABSL_GUARDED_BY(mu_);
  uint64_t running_id_ ABSL_GUARDED_BY(mu_) = 0;
  CancellationFlag* running_flag_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tj
