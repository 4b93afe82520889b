// A call to one job's coordinator (its Coordination service) from the operator: the job's control-role
// credential (derived from the job's secret, job_roles.h) on the call, and for a job whose pods run
// TLS the job's CA and the operator's client certificate from the job's Secret (job_tls_secret.h).
// Not MakeRuntimeChannel: its interceptor adds the process's token and its credentials are the
// process's, and the operator serves many jobs, each with its own.
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

// The operator's side of a job's mutual TLS.
struct CoordinatorTls {
  std::string ca_pem;    // the job's CA: the only issuer the coordinator's certificate may have
  std::string cert_pem;  // the job's control certificate (client use only)
  std::string key_pem;
  // The name the coordinator's certificate carries (its Service's DNS name, TF_CONFIG's chief):
  // the operator dials the pod's IP.
  std::string server_name;
};

// `tls` null: a plaintext channel (a job whose pods run without TLS).
inline std::unique_ptr<v1::Coordination::Stub> CoordinatorStub(const std::string& address,
                                                               const CoordinatorTls* tls) {
  if (tls == nullptr) {
    return v1::Coordination::NewStub(
        grpc::CreateChannel(ChannelTarget(address), grpc::InsecureChannelCredentials()));
  }
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls->ca_pem;
  options.pem_cert_chain = tls->cert_pem;
  options.pem_private_key = tls->key_pem;
  grpc::ChannelArguments args;
  args.SetSslTargetNameOverride(tls->server_name);
  return v1::Coordination::NewStub(grpc::CreateCustomChannel(
      ChannelTarget(address), grpc::SslCredentials(options), args));
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
