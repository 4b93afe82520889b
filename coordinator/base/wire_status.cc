#include "coordinator/base/wire_status.h"

#include <string>

namespace tj {

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  // grpc::StatusCode and absl::StatusCode share their numbering (both follow google.rpc.Code).
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromProto(const v1::StatusProto& proto) {
  if (proto.code() == 0) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(proto.code()), proto.message());
}

void ToProto(const absl::Status& status, v1::StatusProto* proto) {
  proto->set_code(static_cast<int>(status.code()));
  proto->set_message(std::string(status.message()));
}

}  // namespace tj
