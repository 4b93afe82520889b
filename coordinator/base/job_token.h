// The job's secret token: every RPC between a job's processes (coordinator, workers, parameter
// servers, coordination service) carries it as "authorization: Bearer <token>", and every server
// refuses a call without it (Unauthenticated), so no other process or pod can read or push a
// job's parameters or run functions on its workers.
//
// The token comes from the file TJ_TOKEN_FILE names (the operator mounts the job's Secret there;
// `tjctl run` writes one per run), else from TJ_TOKEN. Without either the process runs open, as
// processes started by hand and in-process tests do; servers log that once.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/client_interceptor.h>

#include "absl/status/statusor.h"

namespace tj {

inline constexpr char kTokenFileEnv[] = "TJ_TOKEN_FILE";
inline constexpr char kTokenEnv[] = "TJ_TOKEN";
inline constexpr char kAuthorizationHeader[] = "authorization";

// Reads the token from the environment: the file's content without surrounding whitespace, or
// TJ_TOKEN. nullopt when neither is set; an error naming the file when it cannot be read or is
// empty.
absl::StatusOr<std::optional<std::string>> LoadJobTokenFromEnvironment();

// The process's token, loaded once from the environment at first use (an unreadable token file
// is fatal: a process of a protected job must not run open). Tests replace it.
const std::optional<std::string>& JobToken();
void SetJobTokenForTesting(std::optional<std::string> token);

// For servers: OK when the process has no token or the call carries it; Unauthenticated
// otherwise. Compares in constant time.
grpc::Status CheckJobToken(const grpc::ServerContext& context);

// For channels: adds the process's token to every call (none when the process has none).
std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
JobTokenInterceptors();

// Logs once whether this process's servers require the job token.
void LogJobTokenMode(const std::string& program);

// A new random token: 32 bytes from OpenSSL's CSPRNG, hex.
absl::StatusOr<std::string> GenerateJobToken();

}  // namespace tj

// First line of every RPC handler of the runtime's services.
#define TJ_REQUIRE_JOB_TOKEN(context)                                            \
  do {                                                                           \
    if (grpc::Status token_status = ::tj::CheckJobToken(*(context));             \
        !token_status.ok()) {                                                    \
      return token_status;                                                       \
    }                                                                            \
  } while (false)
