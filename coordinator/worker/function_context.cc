#include "coordinator/worker/function_context.h"

#include "absl/strings/str_cat.h"
#include "coordinator/ps/ps_channel.h"

namespace tj {

void CancellationFlag::Cancel() {
  absl::MutexLock lock(&mu_);
  cancelled_.store(true, std::memory_order_release);
}

absl::Status CancellationFlag::SleepFor(absl::Duration d) const {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(
      absl::Condition(+[](const std::atomic<bool>* c) { return c->load(); }, &cancelled_), d);
  if (cancelled_.load()) return absl::CancelledError("cancelled by the coordinator");
  return absl::OkStatus();
}

PsClients::PsClients(std::vector<std::string> addresses) {
  for (size_t i = 0; i < addresses.size(); ++i) {
    clients_.push_back(
        std::make_unique<PsClient>(MakePsChannel(addresses[i]), static_cast<int>(i), addresses[i]));
  }
}

absl::StatusOr<PsClient*> PsClients::Get(int i) const {
  if (i < 0 || static_cast<size_t>(i) >= clients_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("no parameter server task ", i, ": the cluster has ",
                                                   clients_.size(), " ps task(s)"));
  }
  return clients_[static_cast<size_t>(i)].get();
}

absl::Status FunctionContext::SleepFor(absl::Duration d) const {
  if (cancellation_ == nullptr) {
    absl::SleepFor(d);
    return absl::OkStatus();
  }
  return cancellation_->SleepFor(d);
}

absl::StatusOr<PsClient*> FunctionContext::ps(int task) const {
  if (ps_ == nullptr) return absl::FailedPreconditionError("this worker knows no parameter servers");
  return ps_->Get(task);
}

}  // namespace tj
