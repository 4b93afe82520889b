// The process's credential and how servers authenticate calls: every RPC between a job's processes
// carries the caller's credential as "authorization: Bearer <credential>", and every server
// refuses a call without a valid one (Unauthenticated), so no other process or pod can read or
// push a job's parameters or run functions on its workers. Which role a valid credential carries
// (job_roles.h) is what rpc_authorization.h then checks.
//
// The credential comes from the file TJ_TOKEN_FILE names (the operator mounts the pod's role key
// of the job's Secret there; `tjctl run` writes one per role), else from TJ_TOKEN. The verifiers
// of every role's credential come from TJ_TOKEN_VERIFIERS_FILE. Modes:
// - verifiers: a call is authenticated as the role whose credential it carries;
// - a token but no verifiers (processes started by hand with one shared TJ_TOKEN): a call carrying
//   exactly that token may act as any role, as before roles existed;
// - neither: the process runs open, as processes started by hand and in-process tests do; servers
//   log that once.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/client_interceptor.h>

#include "absl/status/statusor.h"
#include "coordinator/base/job_roles.h"

namespace tj {

inline constexpr char kTokenFileEnv[] = "TJ_TOKEN_FILE";
inline constexpr char kTokenEnv[] = "TJ_TOKEN";
inline constexpr char kTokenVerifiersFileEnv[] = "TJ_TOKEN_VERIFIERS_FILE";
inline constexpr char kAuthorizationHeader[] = "authorization";

// Reads the token from the environment: the file's content without surrounding whitespace, or
// TJ_TOKEN. nullopt when neither is set; an error naming the file when it cannot be read or is
// empty.
absl::StatusOr<std::optional<std::string>> LoadJobTokenFromEnvironment();

// The process's token, loaded once from the environment at first use (an unreadable token file
// is fatal: a process of a protected job must not run open). Tests replace it.
const std::optional<std::string>& JobToken();
void SetJobTokenForTesting(std::optional<std::string> token);

// The verifiers from TJ_TOKEN_VERIFIERS_FILE (nullopt when unset), loaded once at first use; an
// unreadable or malformed file is fatal. Tests replace them.
absl::StatusOr<std::optional<RoleVerifiers>> LoadJobVerifiersFromEnvironment();
const std::optional<RoleVerifiers>& JobVerifiers();
void SetJobVerifiersForTesting(std::optional<RoleVerifiers> verifiers);

// Who a call comes from, as far as the server can tell.
struct CallerIdentity {
  // The role whose credential the call carries; nullopt when the server does not tell roles apart
  // (open, or one shared token): the caller may then act as any role.
  std::optional<JobRole> role;
};

// For servers: the caller's identity, or Unauthenticated when the call carries no credential or
// one that is none of the job's. Compares in constant time.
grpc::Status AuthenticateCall(const grpc::ServerContext& context, CallerIdentity* caller);

// For channels: adds the process's token to every call (none when the process has none).
std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
JobTokenInterceptors();

// Logs once whether this process's servers require the job token.
void LogJobTokenMode(const std::string& program);

// A new random token: 32 bytes from OpenSSL's CSPRNG, hex.
absl::StatusOr<std::string> GenerateJobToken();

}  // namespace tj
