// One logical call fanned out as at most one RPC per PS task, all in flight at once over gRPC's
// callback API (no thread per RPC), then waited for together. Used by ShardedPsClient.
#pragma once

#include <grpcpp/client_context.h>

#include <condition_variable>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "coordinator/base/std_mutex.h"
#include "coordinator/ps/ps_client.h"
#include "coordinator/ps/ps_error.h"

namespace tj {

template <typename Request, typename Response>
class PsFanOut {
 public:
  struct Call {
    grpc::ClientContext context;
    Request request;
    Response response;
    absl::Status status;
  };

  explicit PsFanOut(int num_ps) : calls_(static_cast<size_t>(num_ps)) {}

  // The call to `task`, created on first use: only tasks that have something to do get an RPC.
  Call& To(int task) {
    std::unique_ptr<Call>& call = calls_[static_cast<size_t>(task)];
    if (call == nullptr) call = std::make_unique<Call>();
    return *call;
  }
  // The call to `task`, or nullptr if nothing was sent there.
  Call* Find(int task) const { return calls_[static_cast<size_t>(task)].get(); }

  // Starts every call with start(client, call, done), waits for all of them, and returns OK or one
  // error: a PS connectivity failure first (the runtime's fault handling keys on it), else the
  // first error in task order.
  template <typename Start>
  absl::Status Run(const std::vector<std::shared_ptr<PsClient>>& ps, Start&& start) {
    int started = 0;
    for (const auto& call : calls_) started += call != nullptr;
    if (started == 0) return absl::OkStatus();
    // A mutex and condition variable rather than std::latch: the callback signals while holding
    // the lock, so once the waiter has seen the last one it can destroy both without racing a
    // callback that is still inside them. Each call's status is written under the lock too, and
    // read once the waiter has seen the last callback.
    struct Pending {
      StdMutex mu;
      std::condition_variable finished;
      int left ABSL_GUARDED_BY(mu) = 0;
    } pending;
    {
      StdMutexLock lock(pending.mu);
      pending.left = started;
    }
    for (size_t task = 0; task < calls_.size(); ++task) {
      Call* call = calls_[task].get();
      if (call == nullptr) continue;
      start(*ps[task], *call, [call, &pending](absl::Status status) {
        StdMutexLock lock(pending.mu);
        call->status = std::move(status);
        if (--pending.left == 0) pending.finished.notify_all();
      });
    }
    {
      StdMutexLock lock(pending.mu);
      while (pending.left > 0) pending.finished.wait(lock.native());
    }
    std::optional<absl::Status> first_error;
    for (const auto& call : calls_) {
      if (call == nullptr || call->status.ok()) continue;
      if (PsTaskOf(call->status).has_value()) return call->status;
      if (!first_error.has_value()) first_error = call->status;
    }
    return first_error.value_or(absl::OkStatus());
  }

 private:
  std::vector<std::unique_ptr<Call>> calls_;  // by task; null where nothing is sent
};

}  // namespace tj
