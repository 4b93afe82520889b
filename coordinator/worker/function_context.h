// FunctionContext: what a registered function may ask of the worker running it: which task it is,
// whether the coordinator cancelled the call, and clients for the parameter servers.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordinator/ps/ps_client.h"

namespace tj {

// Set by the worker when the coordinator cancels a running call; long functions poll it or sleep
// through SleepFor, which wakes up on cancellation.
class CancellationFlag {
 public:
  void Cancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  // Sleeps for `d`, or less if cancelled. Returns Cancelled if the flag was set.
  absl::Status SleepFor(absl::Duration d) const;

 private:
  std::atomic<bool> cancelled_{false};
  // Guards no field: Cancel sets cancelled_ under it so that SleepFor's Await sees the change.
  mutable absl::Mutex mu_;
};

// The worker's view of the parameter servers, shared by all calls.
class PsClients {
 public:
  explicit PsClients(std::vector<std::string> addresses);
  size_t size() const { return clients_.size(); }
  // The client for PS task `i`, or an error naming the bad index.
  absl::StatusOr<PsClient*> Get(int i) const;

 private:
  std::vector<std::unique_ptr<PsClient>> clients_;
};

class FunctionContext {
 public:
  FunctionContext(int worker_index, const CancellationFlag* cancellation, const PsClients* ps)
      : worker_index_(worker_index), cancellation_(cancellation), ps_(ps) {}

  int worker_index() const { return worker_index_; }
  bool cancelled() const { return cancellation_ != nullptr && cancellation_->cancelled(); }
  absl::Status SleepFor(absl::Duration d) const;
  absl::StatusOr<PsClient*> ps(int task) const;
  size_t num_ps() const { return ps_ == nullptr ? 0 : ps_->size(); }

 private:
  int worker_index_;
  const CancellationFlag* cancellation_;
  const PsClients* ps_;
};

}  // namespace tj
