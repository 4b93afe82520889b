// PsClient's dense pushes: each carries its body's size (kPushBytesHeader) for the PS's push
// window, and one the PS held back is sent again, until it is admitted or push_held_back_timeout
// passes: its window full (RESOURCE_EXHAUSTED with kPushHeldBackTrailer, nothing read or applied),
// or its gRPC memory bound reached (gRPC cancelled the stream, push_held_back.h).
#include <grpcpp/client_context.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/support/client_callback.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/base/std_mutex.h"
#include "coordinator/ps/dense_wire.h"
#include "coordinator/ps/ps_client.h"
#include "coordinator/ps/push_held_back.h"
#include "coordinator/ps/push_window.h"

namespace tj {
namespace {

bool HeldBack(const grpc::ClientContext& context, const grpc::Status& status) {
  return PushHeldBack(status, context.GetServerTrailingMetadata());
}

}  // namespace

// The attempts of one asynchronous push: every context stays alive until the last attempt ends
// (gRPC may still be finishing an earlier one when its callback starts the next).
struct PsClient::PushAttempts {
  const grpc::ByteBuffer* request = nullptr;
  grpc::ByteBuffer* response = nullptr;
  Done done;
  absl::Time give_up;
  StdMutex mu;
  std::vector<std::unique_ptr<grpc::ClientContext>> retries ABSL_GUARDED_BY(mu);
};

void PsClient::PreparePush(grpc::ClientContext& context, const grpc::ByteBuffer& request) const {
  SetDeadline(context);
  context.AddMetadata(std::string(kPushBytesHeader), std::to_string(request.Length()));
}

absl::Status PsClient::Push(const std::vector<std::string>& names,
                            std::vector<v1::Tensor> deltas) const {
  if (names.size() != deltas.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("push has ", names.size(), " names but ", deltas.size(), " deltas"));
  }
  // The deltas' bytes are sent from where they are: the buffer keeps them alive until written.
  const grpc::ByteBuffer request = EncodePushRequest(names, std::move(deltas));
  const absl::Time give_up = absl::Now() + options_.push_held_back_timeout;
  while (true) {
    grpc::ByteBuffer response;
    grpc::ClientContext context;
    PreparePush(context, request);
    const grpc::Status status =
        grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
            channel_.get(), raw_push_, &context, request, &response);
    // The PS waited for room before it answered, or gRPC freed memory: sent again at once.
    if (!HeldBack(context, status) || absl::Now() >= give_up) return Translate(status);
  }
}

void PsClient::PushRawAsync(grpc::ClientContext& context, const grpc::ByteBuffer& request,
                            grpc::ByteBuffer& response, Done done) const {
  auto attempts = std::make_shared<PushAttempts>();
  attempts->request = &request;
  attempts->response = &response;
  attempts->done = std::move(done);
  attempts->give_up = absl::Now() + options_.push_held_back_timeout;
  PreparePush(context, request);
  SendPush(context, std::move(attempts));
}

void PsClient::SendPush(grpc::ClientContext& context,
                        std::shared_ptr<PushAttempts> attempts) const {
  PushAttempts& a = *attempts;
  grpc::internal::CallbackUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      channel_.get(), raw_push_, &context, a.request, a.response,
      [this, &context, attempts = std::move(attempts)](grpc::Status status) {
        if (HeldBack(context, status) && absl::Now() < attempts->give_up) {
          grpc::ClientContext* next = nullptr;
          {
            StdMutexLock lock(attempts->mu);
            next = attempts->retries.emplace_back(std::make_unique<grpc::ClientContext>()).get();
          }
          PreparePush(*next, *attempts->request);
          SendPush(*next, attempts);
          return;
        }
        attempts->done(Translate(status));
      });
}

}  // namespace tj
