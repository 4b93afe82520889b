#include "coordinator/closure/remote_value.h"

#include "absl/strings/str_cat.h"

namespace tj {

std::string_view RemoteValueStatusName(RemoteValueStatus status) {
  switch (status) {
    case RemoteValueStatus::kNotReady: return "NOT_READY";
    case RemoteValueStatus::kAborted: return "ABORTED";
    case RemoteValueStatus::kReady: return "READY";
  }
  return "UNKNOWN";
}

void RemoteValueState::SetValue(v1::Value value) {
  absl::MutexLock lock(&mu_);
  status_ = RemoteValueStatus::kReady;
  value_ = std::move(value);
  error_ = absl::OkStatus();
}

void RemoteValueState::SetError(absl::Status error) {
  absl::MutexLock lock(&mu_);
  status_ = RemoteValueStatus::kReady;
  value_.Clear();
  error_ = std::move(error);
}

void RemoteValueState::SetCancelled() {
  SetError(absl::CancelledError(
      "the function was cancelled because another scheduled function failed or the coordinator "
      "stopped; schedule it again"));
}

void RemoteValueState::SetAborted() {
  absl::MutexLock lock(&mu_);
  status_ = RemoteValueStatus::kAborted;
  value_.Clear();
  error_ = absl::OkStatus();
}

RemoteValueStatus RemoteValueState::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

absl::StatusOr<v1::Value> RemoteValueState::ResultLocked() const {
  if (status_ == RemoteValueStatus::kAborted) {
    return absl::CancelledError(
        "the function was aborted because the worker holding its value failed; schedule it again");
  }
  if (!error_.ok()) return error_;
  return value_;
}

absl::StatusOr<v1::Value> RemoteValueState::Fetch() const {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](const RemoteValueStatus* s) { return *s != RemoteValueStatus::kNotReady; }, &status_));
  return ResultLocked();
}

absl::StatusOr<v1::Value> RemoteValueState::FetchWithTimeout(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  const bool arrived = mu_.AwaitWithTimeout(
      absl::Condition(
          +[](const RemoteValueStatus* s) { return *s != RemoteValueStatus::kNotReady; }, &status_),
      timeout);
  if (!arrived) {
    return absl::DeadlineExceededError(
        absl::StrCat("RemoteValue not ready after ", absl::FormatDuration(timeout)));
  }
  return ResultLocked();
}

}  // namespace tj
