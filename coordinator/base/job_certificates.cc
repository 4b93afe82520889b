#include "coordinator/base/job_certificates.h"

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tj {
namespace {

struct OpenSslFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, OpenSslFree>;
using X509Ptr = std::unique_ptr<X509, OpenSslFree>;
using BioPtr = std::unique_ptr<BIO, OpenSslFree>;

BioPtr ReadBio(std::string_view pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(size));
}

absl::StatusOr<PemKeyPair> ToPem(X509* cert, EVP_PKEY* key) {
  BioPtr cert_bio(BIO_new(BIO_s_mem()));
  BioPtr key_bio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509(cert_bio.get(), cert) != 1 ||
      PEM_write_bio_PrivateKey(key_bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return absl::InternalError("OpenSSL: cannot write a certificate as PEM");
  }
  return PemKeyPair{BioText(cert_bio.get()), BioText(key_bio.get())};
}

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

// A certificate body: random 127-bit serial (RFC 5280: unique per CA, at most 20 octets),
// valid from an hour ago (clock skew between the operator and the nodes) for `lifetime`.
X509Ptr NewCertificate(EVP_PKEY* key, std::string_view common_name, absl::Duration lifetime) {
  X509Ptr cert(X509_new());
  unsigned char serial[16];
  if (cert == nullptr || RAND_bytes(serial, sizeof(serial)) != 1) return nullptr;
  serial[0] &= 0x7f;
  BIGNUM* number = BN_bin2bn(serial, sizeof(serial), nullptr);
  const bool ok = number != nullptr && BN_to_ASN1_INTEGER(number, X509_get_serialNumber(cert.get()));
  BN_free(number);
  if (!ok) return nullptr;
  X509_set_version(cert.get(), 2);
  time_t now = time(nullptr);  // one instant for both ends: the lifetime is exact
  if (X509_time_adj_ex(X509_getm_notBefore(cert.get()), 0, -3600, &now) == nullptr ||
      X509_time_adj_ex(X509_getm_notAfter(cert.get()), 0,
                       static_cast<long>(absl::ToInt64Seconds(lifetime)), &now) == nullptr) {
    return nullptr;
  }
  X509_set_pubkey(cert.get(), key);
  const std::string cn(common_name.substr(0, 64));  // the X.520 upper bound of a CN
  X509_NAME_add_entry_by_txt(X509_get_subject_name(cert.get()), "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  return cert;
}

}  // namespace

absl::StatusOr<PemKeyPair> NewJobCertificateAuthority(std::string_view common_name,
                                                      absl::Duration lifetime) {
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (key == nullptr) return absl::InternalError("OpenSSL: EC key generation failed");
  X509Ptr ca = NewCertificate(key.get(), common_name, lifetime);
  if (ca == nullptr ||
      X509_set_issuer_name(ca.get(), X509_get_subject_name(ca.get())) != 1 ||
      !AddExtension(ca.get(), ca.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
      !AddExtension(ca.get(), ca.get(), NID_key_usage, "critical,keyCertSign,cRLSign") ||
      !AddExtension(ca.get(), ca.get(), NID_subject_key_identifier, "hash") ||
      X509_sign(ca.get(), key.get(), EVP_sha256()) == 0) {
    return absl::InternalError("OpenSSL: cannot make the job CA");
  }
  return ToPem(ca.get(), key.get());
}

absl::StatusOr<PemKeyPair> IssueJobCertificate(const PemKeyPair& ca, std::string_view common_name,
                                               const std::vector<std::string>& dns_names,
                                               const std::vector<std::string>& ip_addresses,
                                               CertificateUse use, absl::Duration lifetime) {
  BioPtr ca_cert_bio = ReadBio(ca.cert_pem);
  BioPtr ca_key_bio = ReadBio(ca.key_pem);
  X509Ptr ca_cert(PEM_read_bio_X509(ca_cert_bio.get(), nullptr, nullptr, nullptr));
  PkeyPtr ca_key(PEM_read_bio_PrivateKey(ca_key_bio.get(), nullptr, nullptr, nullptr));
  if (ca_cert == nullptr || ca_key == nullptr) {
    return absl::InvalidArgumentError("the job CA's certificate or key is not PEM");
  }
  if (X509_check_private_key(ca_cert.get(), ca_key.get()) != 1) {
    return absl::InvalidArgumentError("the job CA's key does not match its certificate");
  }
  std::vector<std::string> names;
  for (const std::string& dns : dns_names) names.push_back("DNS:" + dns);
  for (const std::string& ip : ip_addresses) names.push_back("IP:" + ip);
  if (names.empty() && use == CertificateUse::kServerAndClient) {
    return absl::InvalidArgumentError("a server certificate needs a DNS name or an IP address");
  }
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (key == nullptr) return absl::InternalError("OpenSSL: EC key generation failed");
  X509Ptr cert = NewCertificate(key.get(), common_name, lifetime);
  const char* usage =
      use == CertificateUse::kServerAndClient ? "serverAuth,clientAuth" : "clientAuth";
  if (cert == nullptr ||
      X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get())) != 1 ||
      (!names.empty() && !AddExtension(cert.get(), ca_cert.get(), NID_subject_alt_name,
                                       absl::StrJoin(names, ","))) ||
      !AddExtension(cert.get(), ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE") ||
      !AddExtension(cert.get(), ca_cert.get(), NID_key_usage, "critical,digitalSignature") ||
      !AddExtension(cert.get(), ca_cert.get(), NID_ext_key_usage, usage) ||
      !AddExtension(cert.get(), ca_cert.get(), NID_authority_key_identifier, "keyid:always") ||
      X509_sign(cert.get(), ca_key.get(), EVP_sha256()) == 0) {
    return absl::InternalError(absl::StrCat("OpenSSL: cannot sign the certificate of ",
                                            std::string(common_name)));
  }
  return ToPem(cert.get(), key.get());
}

absl::StatusOr<std::vector<std::string>> CertificateDnsNames(std::string_view cert_pem) {
  BioPtr bio = ReadBio(cert_pem);
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) return absl::InvalidArgumentError("not a PEM certificate");
  std::unique_ptr<GENERAL_NAMES, OpenSslFree> names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr)));
  std::vector<std::string> out;
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type != GEN_DNS) continue;
    const ASN1_IA5STRING* dns = name->d.dNSName;
    out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(dns)),
                     static_cast<size_t>(ASN1_STRING_length(dns)));
  }
  return out;
}

}  // namespace tj
