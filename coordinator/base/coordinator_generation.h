// Fencing a job's coordinators: each coordinator the operator or `tjctl run` starts gets a
// generation (TJ_COORDINATOR_GENERATION), higher than every earlier one of the job; its runtime
// channels send it on every call ("tj-coordinator-generation"), and servers keep a
// GenerationFence that refuses calls of an older generation than the newest one seen, so a
// coordinator that lives on after its successor started (a pod on a lost node, force-deleted)
// can no longer change parameters, checkpoints or run functions.
#pragma once

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/client_interceptor.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "coordinator/base/std_mutex.h"

namespace tj {

inline constexpr char kCoordinatorGenerationEnv[] = "TJ_COORDINATOR_GENERATION";
inline constexpr char kCoordinatorGenerationHeader[] = "tj-coordinator-generation";

// The generation in TJ_COORDINATOR_GENERATION: 0 when unset (processes started by hand, tests);
// InvalidArgument naming the variable when it is not a decimal number.
absl::StatusOr<uint64_t> LoadCoordinatorGenerationFromEnvironment();

// This process's generation, loaded once (a malformed value is fatal). Tests replace it.
uint64_t CoordinatorGeneration();
void SetCoordinatorGenerationForTesting(uint64_t generation);

// What a starter hands the next coordinator: above `previous` and at least the wall clock in
// milliseconds, so generations also grow across starters (an operator's leader failover, a
// later `tjctl run` on the same checkpoints) without any state kept between them.
uint64_t NextCoordinatorGeneration(uint64_t previous);

// For channels: adds this process's generation to every call (none when it has none).
std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
CoordinatorGenerationInterceptors();

// The generation a call carries: 0 without the header; InvalidArgument for a malformed one.
absl::StatusOr<uint64_t> CallGeneration(const grpc::ServerContext& context);

// The newest generation a server has seen. Call Admit() only after the call was authorized as
// the coordinator's: the header is trusted as much as the role is.
class GenerationFence {
 public:
  // OK (and remembered) for the newest generation so far; FailedPrecondition naming both
  // generations and `what` for an older one.
  grpc::Status Admit(const grpc::ServerContext& context, absl::string_view what);
  absl::Status Admit(uint64_t generation, absl::string_view what);
  // Remembers `generation` as seen without a call: for a generation known from elsewhere, such as
  // the claim a coordinator left in the checkpoint directory before this server (re)started.
  void Raise(uint64_t generation);
  uint64_t newest() const;

 private:
  mutable StdMutex mu_;
  uint64_t newest_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tj
