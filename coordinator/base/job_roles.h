// The roles of a job's callers and their credentials. Each role's credential is derived from the
// job's secret (HMAC-SHA256 of the role's name, keyed by the secret); each process holds only its
// own role's credential plus the verifiers (SHA-256 of every role's credential), which let a server
// tell which role a call carries without being able to mint any credential. The job's secret
// stays with whoever starts the job (the operator, `tjctl run`).
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tj {

enum class JobRole : uint8_t {
  kCoordinator,  // the chief: drives training, creates variables, saves and restores
  kWorker,       // runs functions: pulls, pushes, reports to the coordinator
  kPs,           // a parameter server: registers and heartbeats to the coordinator
  kControl,      // the operator and tjctl: preemption notices, progress reads
};
inline constexpr std::array<JobRole, 4> kAllJobRoles = {JobRole::kCoordinator, JobRole::kWorker,
                                                        JobRole::kPs, JobRole::kControl};

// "coordinator", "worker", "ps", "control": also the file / Secret key names of the credentials.
absl::string_view JobRoleName(JobRole role);
std::optional<JobRole> JobRoleFromName(absl::string_view name);

// A set of roles, for the authorization table.
class JobRoleSet {
 public:
  constexpr JobRoleSet(std::initializer_list<JobRole> roles) {
    for (JobRole role : roles) bits_ |= Bit(role);
  }
  constexpr bool Contains(JobRole role) const { return (bits_ & Bit(role)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  // "coordinator, worker"
  std::string ToString() const;
  friend constexpr bool operator==(JobRoleSet, JobRoleSet) = default;

 private:
  static constexpr uint8_t Bit(JobRole role) { return uint8_t{1} << static_cast<int>(role); }
  uint8_t bits_ = 0;
};

// HMAC-SHA256(key = job secret, message = "tj.v1/role/<name>"), hex (64 characters).
std::string DeriveRoleCredential(absl::string_view job_secret, JobRole role);

// SHA-256 of a credential, hex: what a server keeps to recognise it.
std::string CredentialVerifier(absl::string_view credential);

// One verifier per role.
struct RoleVerifiers {
  std::array<std::string, kAllJobRoles.size()> by_role;
  const std::string& of(JobRole role) const { return by_role[static_cast<int>(role)]; }
};
RoleVerifiers DeriveRoleVerifiers(absl::string_view job_secret);

// The verifiers file: one line "<role> <verifier>" per role. Parsing requires every role exactly
// once; errors name `source` (the file) and the line.
std::string FormatRoleVerifiers(const RoleVerifiers& verifiers);
absl::StatusOr<RoleVerifiers> ParseRoleVerifiers(absl::string_view text, absl::string_view source);

// The role whose credential `presented` is, comparing verifiers in constant time; nullopt when it
// is none of them.
std::optional<JobRole> IdentifyRole(const RoleVerifiers& verifiers, absl::string_view presented);

// Every file a job's starter hands out, by name: one per role (JobRoleName) holding that role's
// credential, and kVerifiersFileName. The operator puts them in the job's Secret (each pod mounts
// its own role's key and the verifiers); `tjctl run` writes them to <work-dir>/credentials.
inline constexpr char kVerifiersFileName[] = "verifiers";
std::map<std::string, std::string> JobCredentialFiles(absl::string_view job_secret);

}  // namespace tj
