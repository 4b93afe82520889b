// The client worker functions use to talk to one parameter-server task. Every RPC has a deadline,
// and a PS that cannot be reached is reported as PsUnavailableError (see ps_error.h) so callers can
// tell a lost PS from an application error.
#pragma once

#include <grpcpp/channel.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tj/v1/ps.grpc.pb.h"

namespace tj {

struct PsClientOptions {
  // Deadline of each RPC, measured from when it is sent.
  absl::Duration rpc_timeout = absl::Seconds(10);
};

// Thread-safe; share one client per PS task among threads.
class PsClient {
 public:
  // `address` only names the PS in error messages (a grpc::Channel does not expose its target); the
  // channel is what connects. Prefer Connect, which passes the same address to both.
  PsClient(std::shared_ptr<grpc::Channel> channel, int ps_task, std::string address = {},
           PsClientOptions options = {});

  // A client over MakePsChannel(address).
  static std::unique_ptr<PsClient> Connect(const std::string& address, int ps_task,
                                           PsClientOptions options = {});

  int ps_task() const { return ps_task_; }
  const std::string& address() const { return address_; }

  // Idempotent on the PS: existing variables with the same dtype and shape keep their values.
  absl::Status CreateVariables(std::vector<v1::VariableSpec> variables) const;
  // The current values of `names`, in order.
  absl::StatusOr<std::vector<v1::Tensor>> Pull(const std::vector<std::string>& names) const;
  // Adds deltas[i] element-wise to variable names[i]; all-or-nothing on the PS.
  absl::Status Push(const std::vector<std::string>& names, std::vector<v1::Tensor> deltas) const;
  absl::StatusOr<v1::PsHealthResponse> Health() const;

 private:
  // OK, a PsUnavailableError for connectivity failures, otherwise the PS's own status unchanged.
  absl::Status Translate(const grpc::Status& status) const;
  void SetDeadline(grpc::ClientContext& context) const;

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ParameterServer::Stub> stub_;
  int ps_task_;
  std::string address_;
  PsClientOptions options_;
};

}  // namespace tj
