#include "operator/controller/preemption_notifier.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "operator/controller/coordinator_rpc.h"
#include "grpcpp/grpcpp.h"
#include "tj/v1/coordination.grpc.pb.h"
#include "coordinator/base/std_mutex.h"

namespace tj::op {

GrpcPreemptionNotifier::GrpcPreemptionNotifier(GrpcPreemptionNotifierOptions options)
    : options_(std::move(options)), thread_([this] { Loop(); }) {}

GrpcPreemptionNotifier::~GrpcPreemptionNotifier() {
  {
    StdMutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void GrpcPreemptionNotifier::Send(PreemptionNotice notice) {
  std::optional<NoticeOutcome> dropped;
  {
    StdMutexLock lock(mu_);
    if (queue_.size() >= options_.max_queued) {
      dropped = NoticeOutcome{std::move(notice),
                              absl::ResourceExhaustedError(absl::StrCat(
                                  "preemption notice queue full (", options_.max_queued,
                                  " waiting): notice dropped")),
                              false, ""};
    } else {
      queue_.push_back(std::move(notice));
    }
  }
  if (dropped) {
    if (options_.on_outcome) options_.on_outcome(*dropped);
    return;
  }
  cv_.notify_one();
}

void GrpcPreemptionNotifier::Loop() {
  while (true) {
    PreemptionNotice notice;
    {
      StdMutexLock lock(mu_);
      cv_.wait(lock.native(), [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      notice = std::move(queue_.front());
      queue_.pop_front();
    }
    NoticeOutcome outcome = Deliver(notice);
    if (options_.on_outcome) options_.on_outcome(outcome);
  }
}

NoticeOutcome GrpcPreemptionNotifier::Deliver(const PreemptionNotice& notice) const {
  NoticeOutcome outcome{notice, absl::OkStatus(), false, ""};
  auto stub = CoordinatorStub(notice.coordinator_address, notice.tls.get());
  grpc::ClientContext context;
  PrepareCoordinatorCall(context, notice.token, options_.rpc_timeout);
  v1::PreemptionNoticeRequest request;
  request.mutable_task()->set_type(notice.task_type);
  request.mutable_task()->set_index(notice.task_index);
  request.set_reason(notice.reason);
  if (notice.deadline != absl::InfinitePast()) {
    request.set_deadline_unix_millis(absl::ToUnixMillis(notice.deadline));
  }
  v1::PreemptionNoticeResponse response;
  grpc::Status status = stub->PreemptionNotice(&context, request, &response);
  if (!status.ok()) {
    outcome.status = absl::Status(
        static_cast<absl::StatusCode>(status.error_code()),
        absl::StrCat("PreemptionNotice to the coordinator of ", notice.job, " at ",
                     notice.coordinator_address, ": ", status.error_message()));
    return outcome;
  }
  outcome.accepted = response.accepted();
  outcome.decision = response.decision();
  return outcome;
}

}  // namespace tj::op
