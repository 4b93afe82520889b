#include "coordinator/base/job_tls.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tj {
namespace {

std::mutex tls_mu;
std::optional<std::optional<JobTlsFiles>>& TlsSlot() {
  static std::optional<std::optional<JobTlsFiles>> slot;
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

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;

PkeyPtr NewKey() { return PkeyPtr(EVP_EC_gen("P-256")); }

bool AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return false;
  const bool added = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return added;
}

X509Ptr NewCert(EVP_PKEY* key, const std::string& common_name, long serial) {
  X509Ptr cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 30L * 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  return cert;
}

std::string ToPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(size));
  BIO_free(bio);
  return out;
}

std::string ToPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(size));
  BIO_free(bio);
  return out;
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
  std::lock_guard lock(tls_mu);
  auto& slot = TlsSlot();
  if (!slot.has_value()) {
    const char* dir = std::getenv(kTlsDirEnv);
    if (dir == nullptr || *dir == '\0') {
      slot = std::optional<JobTlsFiles>();
    } else {
      auto loaded = LoadJobTls(dir);
      if (!loaded.ok()) {
        spdlog::critical("{}", loaded.status().ToString());
        std::exit(2);
      }
      slot = std::optional<JobTlsFiles>(*std::move(loaded));
    }
  }
  return *slot;
}

void SetJobTlsForTesting(std::optional<JobTlsFiles> tls) {
  std::lock_guard lock(tls_mu);
  TlsSlot() = std::move(tls);
}

std::shared_ptr<grpc::ServerCredentials> RuntimeServerCredentials() {
  const auto& tls = JobTls();
  if (!tls.has_value()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options;
  options.pem_root_certs = tls->ca_pem;
  options.pem_key_cert_pairs.push_back({tls->key_pem, tls->cert_pem});
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
  PkeyPtr ca_key = NewKey();
  PkeyPtr key = NewKey();
  if (ca_key == nullptr || key == nullptr) return absl::InternalError("OpenSSL: EC key generation failed");

  X509Ptr ca = NewCert(ca_key.get(), "trainingjob job CA", 1);
  X509_set_issuer_name(ca.get(), X509_get_subject_name(ca.get()));
  if (!AddExtension(ca.get(), ca.get(), NID_basic_constraints, "critical,CA:TRUE") ||
      !AddExtension(ca.get(), ca.get(), NID_key_usage, "critical,keyCertSign,cRLSign") ||
      X509_sign(ca.get(), ca_key.get(), EVP_sha256()) == 0) {
    return absl::InternalError("OpenSSL: cannot make the job CA");
  }

  X509Ptr cert = NewCert(key.get(), dns_names.empty() ? "trainingjob" : dns_names.front(), 2);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca.get()));
  std::vector<std::string> names;
  for (const auto& dns : dns_names) names.push_back("DNS:" + dns);
  for (const auto& ip : ip_addresses) names.push_back("IP:" + ip);
  if (names.empty()) return absl::InvalidArgumentError("a job certificate needs a DNS name or an IP");
  if (!AddExtension(cert.get(), ca.get(), NID_subject_alt_name, absl::StrJoin(names, ",")) ||
      !AddExtension(cert.get(), ca.get(), NID_basic_constraints, "critical,CA:FALSE") ||
      !AddExtension(cert.get(), ca.get(), NID_ext_key_usage, "serverAuth,clientAuth") ||
      X509_sign(cert.get(), ca_key.get(), EVP_sha256()) == 0) {
    return absl::InternalError("OpenSSL: cannot sign the job certificate");
  }
  for (absl::Status status : {WritePrivate(dir + "/ca.crt", ToPem(ca.get()), false),
                              WritePrivate(dir + "/tls.crt", ToPem(cert.get()), false),
                              WritePrivate(dir + "/tls.key", ToPem(key.get()), true)}) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace tj
