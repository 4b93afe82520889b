// Conversions between absl::Status, grpc::Status and the wire's StatusProto, keeping the code so that
// retry decisions (Unavailable: retry, FailedPrecondition: don't) survive the trip.
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "tj/v1/value.pb.h"

namespace tj {

absl::Status FromGrpc(const grpc::Status& status);
grpc::Status ToGrpc(const absl::Status& status);
absl::Status FromProto(const v1::StatusProto& proto);
void ToProto(const absl::Status& status, v1::StatusProto* proto);

}  // namespace tj
