#include "coordinator/base/job_roles.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace tj {
namespace {

std::string Hex(const unsigned char* bytes, size_t size) {
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(bytes), size));
}

bool IsLowerHex(absl::string_view text) {
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

absl::string_view JobRoleName(JobRole role) {
  switch (role) {
    case JobRole::kCoordinator:
      return "coordinator";
    case JobRole::kWorker:
      return "worker";
    case JobRole::kPs:
      return "ps";
    case JobRole::kControl:
      return "control";
  }
  return "unknown";
}

std::optional<JobRole> JobRoleFromName(absl::string_view name) {
  for (JobRole role : kAllJobRoles) {
    if (JobRoleName(role) == name) return role;
  }
  return std::nullopt;
}

std::string JobRoleSet::ToString() const {
  std::vector<absl::string_view> names;
  for (JobRole role : kAllJobRoles) {
    if (Contains(role)) names.push_back(JobRoleName(role));
  }
  return names.empty() ? "none" : absl::StrJoin(names, ", ");
}

std::string DeriveRoleCredential(absl::string_view job_secret, JobRole role) {
  const std::string message = absl::StrCat("tj.v1/role/", JobRoleName(role));
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_size = 0;
  HMAC(EVP_sha256(), job_secret.data(), static_cast<int>(job_secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &mac_size);
  return Hex(mac, mac_size);
}

std::string CredentialVerifier(absl::string_view credential) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(credential.data()), credential.size(), digest);
  return Hex(digest, sizeof(digest));
}

RoleVerifiers DeriveRoleVerifiers(absl::string_view job_secret) {
  RoleVerifiers verifiers;
  for (JobRole role : kAllJobRoles) {
    verifiers.by_role[static_cast<int>(role)] =
        CredentialVerifier(DeriveRoleCredential(job_secret, role));
  }
  return verifiers;
}

std::string FormatRoleVerifiers(const RoleVerifiers& verifiers) {
  std::string text;
  for (JobRole role : kAllJobRoles) {
    absl::StrAppend(&text, JobRoleName(role), " ", verifiers.of(role), "\n");
  }
  return text;
}

absl::StatusOr<RoleVerifiers> ParseRoleVerifiers(absl::string_view text, absl::string_view source) {
  RoleVerifiers verifiers;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    const std::string where = absl::StrCat(source, ":", line_number);
    if (fields.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": expected \"<role> <sha256 hex>\", got \"", line, "\""));
    }
    std::optional<JobRole> role = JobRoleFromName(fields[0]);
    if (!role) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": unknown role \"", fields[0],
                                                     "\" (coordinator, worker, ps, control)"));
    }
    if (fields[1].size() != 2 * SHA256_DIGEST_LENGTH || !IsLowerHex(fields[1])) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": the verifier of role ", fields[0],
                                                     " is not 64 lower-case hex digits"));
    }
    std::string& slot = verifiers.by_role[static_cast<int>(*role)];
    if (!slot.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": role ", fields[0], " appears twice"));
    }
    slot = std::string(fields[1]);
  }
  for (JobRole role : kAllJobRoles) {
    if (verifiers.of(role).empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": no verifier for role ", JobRoleName(role)));
    }
  }
  return verifiers;
}

std::optional<JobRole> IdentifyRole(const RoleVerifiers& verifiers, absl::string_view presented) {
  const std::string digest = CredentialVerifier(presented);
  std::optional<JobRole> found;
  // Every role is compared, so the time taken does not say which one matched.
  for (JobRole role : kAllJobRoles) {
    const std::string& expected = verifiers.of(role);
    if (expected.size() == digest.size() &&
        CRYPTO_memcmp(expected.data(), digest.data(), digest.size()) == 0) {
      found = role;
    }
  }
  return found;
}

std::map<std::string, std::string> JobCredentialFiles(absl::string_view job_secret) {
  std::map<std::string, std::string> files;
  for (JobRole role : kAllJobRoles) {
    files[std::string(JobRoleName(role))] = DeriveRoleCredential(job_secret, role);
  }
  files[kVerifiersFileName] = FormatRoleVerifiers(DeriveRoleVerifiers(job_secret));
  return files;
}

}  // namespace tj
