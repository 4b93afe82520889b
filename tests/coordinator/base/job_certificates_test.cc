// Issuing a job's certificates: the chain verifies against the job's CA only, for the purposes
// its use allows, with the names asked for, and for the lifetime asked for.
#include "coordinator/base/job_certificates.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <memory>

namespace tj {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

X509Ptr Parse(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509Ptr cert(PEM_read_bio_X509(bio, nullptr, nullptr, nullptr));
  BIO_free(bio);
  return cert;
}

// X509_verify_cert of `leaf` against `ca` alone, for an SSL purpose (X509_PURPOSE_SSL_SERVER...):
// "" when it verifies, else OpenSSL's reason.
std::string Verify(const std::string& ca_pem, const std::string& leaf_pem, int purpose) {
  X509Ptr ca = Parse(ca_pem);
  X509Ptr leaf = Parse(leaf_pem);
  if (ca == nullptr || leaf == nullptr) return "does not parse";
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca.get());
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf.get(), nullptr);
  X509_STORE_CTX_set_purpose(ctx, purpose);
  const int ok = X509_verify_cert(ctx);
  std::string reason = ok == 1 ? "" : X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return reason;
}

TEST(JobCertificatesTest, TheCaIsAConstrainedCaForSigningOnly) {
  auto ca = NewJobCertificateAuthority("trainingjob CA default/digits", absl::Hours(1));
  ASSERT_TRUE(ca.ok()) << ca.status();
  EXPECT_THAT(ca->key_pem, HasSubstr("BEGIN PRIVATE KEY"));
  X509Ptr cert = Parse(ca->cert_pem);
  ASSERT_NE(cert, nullptr);
  EXPECT_EQ(X509_check_ca(cert.get()), 1);
  EXPECT_EQ(X509_get_pathlen(cert.get()), 0) << "signs leaves only";
  EXPECT_EQ(X509_get_key_usage(cert.get()), static_cast<uint32_t>(KU_KEY_CERT_SIGN | KU_CRL_SIGN));
  EXPECT_EQ(X509_check_issued(cert.get(), cert.get()), X509_V_OK) << "self-signed";
}

TEST(JobCertificatesTest, AServerCertificateVerifiesWithItsNamesAndBothPurposes) {
  auto ca = NewJobCertificateAuthority("job CA", absl::Hours(1));
  ASSERT_TRUE(ca.ok()) << ca.status();
  auto leaf = IssueJobCertificate(
      *ca, "digits ps", {"digits-ps-0.default.svc", "digits-ps-1.default.svc"}, {"127.0.0.1"},
      CertificateUse::kServerAndClient, absl::Hours(24 * 365 * 10));
  ASSERT_TRUE(leaf.ok()) << leaf.status();
  EXPECT_EQ(Verify(ca->cert_pem, leaf->cert_pem, X509_PURPOSE_SSL_SERVER), "");
  EXPECT_EQ(Verify(ca->cert_pem, leaf->cert_pem, X509_PURPOSE_SSL_CLIENT), "");

  auto names = CertificateDnsNames(leaf->cert_pem);
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_THAT(*names, ElementsAre("digits-ps-0.default.svc", "digits-ps-1.default.svc"));
  X509Ptr cert = Parse(leaf->cert_pem);
  EXPECT_EQ(X509_check_host(cert.get(), "digits-ps-1.default.svc", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_host(cert.get(), "digits-worker-0.default.svc", 0, 0, nullptr), 0);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_ca(cert.get()), 0);
  EXPECT_EQ(X509_get_key_usage(cert.get()), static_cast<uint32_t>(KU_DIGITAL_SIGNATURE));
  EXPECT_EQ(X509_get_extended_key_usage(cert.get()),
            static_cast<uint32_t>(XKU_SSL_SERVER | XKU_SSL_CLIENT));
  // The lifetime asked for, from an hour before now (clock skew).
  int days = 0, seconds = 0;
  ASSERT_EQ(ASN1_TIME_diff(&days, &seconds, X509_get0_notBefore(cert.get()),
                           X509_get0_notAfter(cert.get())),
            1);
  EXPECT_EQ(days, 365 * 10);
  EXPECT_EQ(seconds, 3600);
}

TEST(JobCertificatesTest, AClientCertificateCannotServe) {
  auto ca = NewJobCertificateAuthority("job CA", absl::Hours(1));
  ASSERT_TRUE(ca.ok());
  auto control = IssueJobCertificate(*ca, "trainingjob-operator", {}, {}, CertificateUse::kClient,
                                     absl::Hours(1));
  ASSERT_TRUE(control.ok()) << control.status();
  EXPECT_EQ(Verify(ca->cert_pem, control->cert_pem, X509_PURPOSE_SSL_CLIENT), "");
  EXPECT_NE(Verify(ca->cert_pem, control->cert_pem, X509_PURPOSE_SSL_SERVER), "");
  EXPECT_EQ(X509_get_extended_key_usage(Parse(control->cert_pem).get()),
            static_cast<uint32_t>(XKU_SSL_CLIENT));
}

TEST(JobCertificatesTest, AnotherJobsCaDoesNotVerifyTheCertificate) {
  auto ca = NewJobCertificateAuthority("job CA", absl::Hours(1));
  auto other = NewJobCertificateAuthority("job CA", absl::Hours(1));  // the same name, too
  ASSERT_TRUE(ca.ok() && other.ok());
  auto leaf = IssueJobCertificate(*ca, "w", {"w.default.svc"}, {},
                                  CertificateUse::kServerAndClient, absl::Hours(1));
  ASSERT_TRUE(leaf.ok());
  EXPECT_NE(Verify(other->cert_pem, leaf->cert_pem, X509_PURPOSE_SSL_CLIENT), "");
  EXPECT_NE(X509_cmp(Parse(ca->cert_pem).get(), Parse(other->cert_pem).get()), 0);
}

TEST(JobCertificatesTest, BadInputIsRefusedWithTheReason) {
  auto ca = NewJobCertificateAuthority("job CA", absl::Hours(1));
  auto other = NewJobCertificateAuthority("job CA", absl::Hours(1));
  ASSERT_TRUE(ca.ok() && other.ok());
  auto no_names = IssueJobCertificate(*ca, "s", {}, {}, CertificateUse::kServerAndClient,
                                      absl::Hours(1));
  EXPECT_EQ(no_names.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_names.status().message(), HasSubstr("DNS name"));
  auto mismatched = IssueJobCertificate({ca->cert_pem, other->key_pem}, "s", {"s"}, {},
                                        CertificateUse::kServerAndClient, absl::Hours(1));
  EXPECT_THAT(mismatched.status().message(), HasSubstr("does not match"));
  auto garbage = IssueJobCertificate({"not pem", ca->key_pem}, "s", {"s"}, {},
                                     CertificateUse::kServerAndClient, absl::Hours(1));
  EXPECT_THAT(garbage.status().message(), HasSubstr("not PEM"));
  EXPECT_FALSE(CertificateDnsNames("garbage").ok());
}

}  // namespace
}  // namespace tj
