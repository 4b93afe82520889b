// A call to one job's coordinator (its Coordination service) from the operator: a plain channel
// and the job's control-role credential (derived from the job's secret, job_roles.h) on the call.
// Not MakeRuntimeChannel: its interceptor adds the process's token, and the operator serves many
// jobs, each with its own.
#pragma once

#include <memory>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/base/channel.h"
#include "coordinator/base/job_roles.h"
#include "grpcpp/grpcpp.h"
#include "tj/v1/coordination.grpc.pb.h"

namespace tj::op {

inline std::unique_ptr<v1::Coordination::Stub> CoordinatorStub(const std::string& address) {
  return v1::Coordination::NewStub(
      grpc::CreateChannel(ChannelTarget(address), grpc::InsecureChannelCredentials()));
}

// Deadline and "authorization: Bearer <control credential>" (none for a job that runs open).
// `token` is the job's secret, from its Secret.
inline void PrepareCoordinatorCall(grpc::ClientContext& context, const std::string& token,
                                   absl::Duration timeout) {
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  if (!token.empty()) {
    context.AddMetadata("authorization",
                        "Bearer " + DeriveRoleCredential(token, JobRole::kControl));
  }
}

}  // namespace tj::op
