#include "coordinator/base/job_tls.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "coordinator/base/job_certificates.h"
#include "coordinator/base/process_slot.h"

namespace tj {
namespace {

ProcessSlot<std::optional<JobTlsFiles>>& TlsSlot() {
  static ProcessSlot<std::optional<JobTlsFiles>> slot;
  return slot;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(kTlsDirEnv, ": cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().empty()) return absl::InvalidArgumentError(absl::StrCat(path, " is empty"));
  return text.str();
}

absl::Status WritePrivate(const std::string& path, const std::string& content, bool secret) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  out.close();
  if (secret) chmod(path.c_str(), 0600);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<JobTlsFiles> LoadJobTls(const std::string& dir) {
  JobTlsFiles files;
  for (auto [name, into] : {std::pair<const char*, std::string*>{"ca.crt", &files.ca_pem},
                            {"tls.crt", &files.cert_pem},
                            {"tls.key", &files.key_pem}}) {
    auto text = ReadFile(dir + "/" + name);
    if (!text.ok()) return text.status();
    *into = *std::move(text);
  }
  return files;
}

const std::optional<JobTlsFiles>& JobTls() {
  return TlsSlot().Get([]() -> std::optional<JobTlsFiles> {
    const char* dir = std::getenv(kTlsDirEnv);
    if (dir == nullptr || *dir == '\0') return std::nullopt;
    auto loaded = LoadJobTls(dir);
    if (!loaded.ok()) {
      spdlog::critical("{}", loaded.status().ToString());
      std::exit(2);
    }
    return *std::move(loaded);
  });
}

void SetJobTlsForTesting(std::optional<JobTlsFiles> tls) { TlsSlot().Set(std::move(tls)); }

std::shared_ptr<grpc::ServerCredentials> RuntimeServerCredentials() {
  const auto& tls = JobTls();
  if (!tls.has_value()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options;
  options.pem_root_certs = tls->ca_pem;
  options.pem_key_cert_pairs.push_back({tls->key_pem, tls->cert_pem});
  // Mutual TLS: a caller must present a certificate of this job's CA before any RPC (and its
  // role credential on every call): a pod of another job, or anything else that can reach the
  // port, gets no connection at all.
  options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> RuntimeChannelCredentials() {
  const auto& tls = JobTls();
  if (!tls.has_value()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls->ca_pem;
  options.pem_private_key = tls->key_pem;
  options.pem_cert_chain = tls->cert_pem;
  return grpc::SslCredentials(options);
}

absl::Status GenerateJobTls(const std::string& dir, const std::vector<std::string>& dns_names,
                            const std::vector<std::string>& ip_addresses) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return absl::UnavailableError(absl::StrCat("cannot create ", dir, ": ", error.message()));
  absl::StatusOr<PemKeyPair> ca =
      NewJobCertificateAuthority("trainingjob job CA", kJobCertificateLifetime);
  if (!ca.ok()) return ca.status();
  absl::StatusOr<PemKeyPair> cert = IssueJobCertificate(
      *ca, dns_names.empty() ? "trainingjob" : dns_names.front(), dns_names, ip_addresses,
      CertificateUse::kServerAndClient, kJobCertificateLifetime);
  if (!cert.ok()) return cert.status();
  for (absl::Status status : {WritePrivate(dir + "/ca.crt", ca->cert_pem, false),
                              WritePrivate(dir + "/tls.crt", cert->cert_pem, false),
                              WritePrivate(dir + "/tls.key", cert->key_pem, true)}) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace tj
