// RemoteValue: the future returned by ClusterCoordinator::Schedule. Its state moves
// NOT_READY -> READY (a value or a non-retryable error), or NOT_READY/READY -> ABORTED when the value
// lived on a worker that was lost (per-worker resources), and back to READY when rebuilt.
#pragma once

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tj/v1/value.pb.h"

namespace tj {

enum class RemoteValueStatus { kNotReady, kAborted, kReady };

std::string_view RemoteValueStatusName(RemoteValueStatus status);

// The shared state behind a RemoteValue; written by the runtime, read by users.
class RemoteValueState {
 public:
  void SetValue(v1::Value value);
  void SetError(absl::Status error);
  void SetCancelled();
  void SetAborted();

  RemoteValueStatus status() const;
  // Blocks until the value is READY or ABORTED. ABORTED and cancelled values give a Cancelled error.
  absl::StatusOr<v1::Value> Fetch() const;
  // As Fetch, but gives DeadlineExceeded if nothing arrived in time.
  absl::StatusOr<v1::Value> FetchWithTimeout(absl::Duration timeout) const;

 private:
  absl::StatusOr<v1::Value> ResultLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  RemoteValueStatus status_ ABSL_GUARDED_BY(mu_) = RemoteValueStatus::kNotReady;
  v1::Value value_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);
};

// A cheap, copyable handle on a scheduled function's result.
class RemoteValue {
 public:
  RemoteValue() = default;
  explicit RemoteValue(std::shared_ptr<RemoteValueState> state) : state_(std::move(state)) {}

  RemoteValueStatus status() const { return state_->status(); }
  absl::StatusOr<v1::Value> Fetch() const { return state_->Fetch(); }
  absl::StatusOr<v1::Value> FetchWithTimeout(absl::Duration t) const {
    return state_->FetchWithTimeout(t);
  }
  bool valid() const { return state_ != nullptr; }

 private:
  std::shared_ptr<RemoteValueState> state_;
};

}  // namespace tj
