// Optional TLS for the job's channels: when TJ_TLS_DIR names a directory holding ca.crt, tls.crt
// and tls.key (the layout of a Kubernetes TLS Secret plus its CA), every runtime server serves
// TLS with that certificate and every runtime channel verifies its peer against that CA. The job
// token (job_token.h) still authenticates callers; TLS keeps parameters and tokens off the wire in
// the clear. Servers require a client certificate signed by the job's CA (mutual TLS).
// Certificates are made per job (job_certificates.h): by `tjctl run --tls` (GenerateJobTls) and,
// on a cluster, by the operator.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"

namespace tj {

inline constexpr char kTlsDirEnv[] = "TJ_TLS_DIR";

struct JobTlsFiles {
  std::string ca_pem;
  std::string cert_pem;
  std::string key_pem;
};

// Reads the three files from `dir`; errors name the file.
absl::StatusOr<JobTlsFiles> LoadJobTls(const std::string& dir);

// The process's TLS material, loaded once from TJ_TLS_DIR (unreadable files are fatal at start:
// a job that asked for TLS must not fall back to plaintext). nullopt: plaintext.
const std::optional<JobTlsFiles>& JobTls();
void SetJobTlsForTesting(std::optional<JobTlsFiles> tls);

std::shared_ptr<grpc::ServerCredentials> RuntimeServerCredentials();
std::shared_ptr<grpc::ChannelCredentials> RuntimeChannelCredentials();

// Writes ca.crt, tls.crt and tls.key (mode 0600) into `dir`: a new CA (EC P-256) and a certificate
// it signs for the given DNS names and IP addresses (server and client use), both valid for
// kJobCertificateLifetime.
absl::Status GenerateJobTls(const std::string& dir, const std::vector<std::string>& dns_names,
                            const std::vector<std::string>& ip_addresses);

}  // namespace tj
