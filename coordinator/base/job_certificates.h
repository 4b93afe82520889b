// Issuing a job's certificates: a CA made for one job (EC P-256, self-signed) and leaf
// certificates it signs. Who calls it: `tjctl run --tls` (job_tls.h's GenerateJobTls) and the
// operator, which keeps the CA and every role's certificate in the job's Secret. A job's processes
// trust only their job's CA, and servers require a client certificate it signed (job_tls.h), so a
// certificate of another job, or none, gets no connection.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tj {

// Certificates of a job live as long as the job may (docs/decisions.md, "Session 7: TLS"): the
// runtime loads its certificate once at start and never reloads it, so a certificate that expired
// while a job runs would cut its replicas off from each other.
inline constexpr absl::Duration kJobCertificateLifetime = absl::Hours(24 * 365 * 10);

struct PemKeyPair {
  std::string cert_pem;
  std::string key_pem;  // PKCS#8
};

enum class CertificateUse {
  kServerAndClient,  // a replica: serves its RPCs and calls its peers
  kClient,           // the operator's or tjctl's calls to a job (never a server)
};

// A new CA for one job: CN "<common_name>", CA:TRUE (path length 0), keyCertSign and cRLSign.
absl::StatusOr<PemKeyPair> NewJobCertificateAuthority(std::string_view common_name,
                                                      absl::Duration lifetime);

// A leaf certificate signed by `ca`: CA:FALSE, digitalSignature, the extended key usages of `use`,
// the DNS names and IP addresses as subjectAltNames (a server certificate needs at least one).
// InvalidArgument when `ca` does not parse or its key does not match.
absl::StatusOr<PemKeyPair> IssueJobCertificate(const PemKeyPair& ca, std::string_view common_name,
                                               const std::vector<std::string>& dns_names,
                                               const std::vector<std::string>& ip_addresses,
                                               CertificateUse use, absl::Duration lifetime);

// The DNS subjectAltNames of a PEM certificate, in order. InvalidArgument if it does not parse.
absl::StatusOr<std::vector<std::string>> CertificateDnsNames(std::string_view cert_pem);

}  // namespace tj
