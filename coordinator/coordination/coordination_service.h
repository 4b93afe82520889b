// The Coordination gRPC service the coordinator hosts on its own TF_CONFIG address: the
// CoordinationState over the wire, plus PreemptionNotice, which the operator and `tjctl` send when
// a pod or process is about to be terminated and which goes to the coordinator's preemption
// handler. Every call needs the job token.
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>

#include "coordinator/coordination/coordination_state.h"
#include "tj/v1/coordination.grpc.pb.h"

namespace tj {

using PreemptionNoticeSink =
    std::function<v1::PreemptionNoticeResponse(const v1::PreemptionNoticeRequest&)>;
// Told of every new task incarnation that registers (a task started, restarted, or added to the
// job by scaling it up), with the address it gave. Runs on a gRPC thread: must not block.
using TaskRegistrationSink = std::function<void(const v1::RegisterTaskRequest&)>;

class CoordinationService final : public v1::Coordination::Service {
 public:
  // `state` must outlive the service. Without a sink, notices are refused (accepted = false).
  explicit CoordinationService(CoordinationState* state, PreemptionNoticeSink sink = nullptr)
      : state_(state), sink_(std::move(sink)) {}

  // Set before the server starts.
  void set_registration_sink(TaskRegistrationSink sink) { registration_sink_ = std::move(sink); }

  grpc::Status RegisterTask(grpc::ServerContext* context, const v1::RegisterTaskRequest* request,
                            v1::RegisterTaskResponse* response) override;
  grpc::Status Heartbeat(grpc::ServerContext* context, const v1::HeartbeatRequest* request,
                         v1::HeartbeatResponse* response) override;
  grpc::Status KeyValueSet(grpc::ServerContext* context, const v1::KeyValueSetRequest* request,
                           v1::KeyValueSetResponse* response) override;
  grpc::Status KeyValueGet(grpc::ServerContext* context, const v1::KeyValueGetRequest* request,
                           v1::KeyValueGetResponse* response) override;
  grpc::Status KeyValueDelete(grpc::ServerContext* context,
                              const v1::KeyValueDeleteRequest* request,
                              v1::KeyValueDeleteResponse* response) override;
  grpc::Status KeyValueList(grpc::ServerContext* context, const v1::KeyValueListRequest* request,
                            v1::KeyValueListResponse* response) override;
  grpc::Status Barrier(grpc::ServerContext* context, const v1::BarrierRequest* request,
                       v1::BarrierResponse* response) override;
  grpc::Status GetTaskStates(grpc::ServerContext* context, const v1::GetTaskStatesRequest* request,
                             v1::GetTaskStatesResponse* response) override;
  grpc::Status PreemptionNotice(grpc::ServerContext* context,
                                const v1::PreemptionNoticeRequest* request,
                                v1::PreemptionNoticeResponse* response) override;

 private:
  CoordinationState* state_;
  PreemptionNoticeSink sink_;
  TaskRegistrationSink registration_sink_;
};

}  // namespace tj
