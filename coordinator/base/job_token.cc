#include "coordinator/base/job_token.h"

#include "coordinator/base/job_tls.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "coordinator/base/process_slot.h"

namespace tj {
namespace {

ProcessSlot<std::optional<std::string>>& TokenSlot() {
  static ProcessSlot<std::optional<std::string>> slot;
  return slot;
}
ProcessSlot<std::optional<RoleVerifiers>>& VerifiersSlot() {
  static ProcessSlot<std::optional<RoleVerifiers>> slot;
  return slot;
}

constexpr absl::string_view kBearerPrefix = "Bearer ";

class TokenInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit TokenInterceptor(std::string header) : header_(std::move(header)) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->insert({kAuthorizationHeader, header_});
    }
    methods->Proceed();
  }

 private:
  const std::string header_;
};

class TokenInterceptorFactory : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit TokenInterceptorFactory(std::string header) : header_(std::move(header)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo*) override {
    return new TokenInterceptor(header_);
  }

 private:
  const std::string header_;
};

}  // namespace

absl::StatusOr<std::optional<std::string>> LoadJobTokenFromEnvironment() {
  if (const char* path = std::getenv(kTokenFileEnv); path != nullptr && *path != '\0') {
    std::ifstream in(path);
    if (!in) {
      return absl::PermissionDeniedError(
          absl::StrCat(kTokenFileEnv, "=", path, ": cannot read the job token file"));
    }
    std::stringstream text;
    text << in.rdbuf();
    std::string token(absl::StripAsciiWhitespace(text.str()));
    if (token.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kTokenFileEnv, "=", path, ": the job token file is empty"));
    }
    return std::optional<std::string>(std::move(token));
  }
  if (const char* token = std::getenv(kTokenEnv); token != nullptr && *token != '\0') {
    return std::optional<std::string>(std::string(absl::StripAsciiWhitespace(token)));
  }
  return std::optional<std::string>();
}

const std::optional<std::string>& JobToken() {
  return TokenSlot().Get([] {
    auto loaded = LoadJobTokenFromEnvironment();
    if (!loaded.ok()) {
      spdlog::critical("{}", loaded.status().ToString());
      std::exit(2);
    }
    return *std::move(loaded);
  });
}

void SetJobTokenForTesting(std::optional<std::string> token) { TokenSlot().Set(std::move(token)); }

absl::StatusOr<std::optional<RoleVerifiers>> LoadJobVerifiersFromEnvironment() {
  const char* path = std::getenv(kTokenVerifiersFileEnv);
  if (path == nullptr || *path == '\0') return std::optional<RoleVerifiers>();
  std::ifstream in(path);
  if (!in) {
    return absl::PermissionDeniedError(
        absl::StrCat(kTokenVerifiersFileEnv, "=", path, ": cannot read the job's verifiers file"));
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<RoleVerifiers> parsed =
      ParseRoleVerifiers(text.str(), absl::StrCat(kTokenVerifiersFileEnv, "=", path));
  if (!parsed.ok()) return parsed.status();
  return std::optional<RoleVerifiers>(*std::move(parsed));
}

const std::optional<RoleVerifiers>& JobVerifiers() {
  return VerifiersSlot().Get([] {
    auto loaded = LoadJobVerifiersFromEnvironment();
    if (!loaded.ok()) {
      spdlog::critical("{}", loaded.status().ToString());
      std::exit(2);
    }
    return *std::move(loaded);
  });
}

void SetJobVerifiersForTesting(std::optional<RoleVerifiers> verifiers) {
  VerifiersSlot().Set(std::move(verifiers));
}

grpc::Status AuthenticateCall(const grpc::ServerContext& context, CallerIdentity* caller) {
  *caller = CallerIdentity{};
  const std::optional<RoleVerifiers>& verifiers = JobVerifiers();
  const std::optional<std::string>& token = JobToken();
  if (!verifiers.has_value() && !token.has_value()) return grpc::Status::OK;  // open
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kAuthorizationHeader);
  if (it == metadata.end()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "this server belongs to a training job: the call carries no job token");
  }
  const absl::string_view header(it->second.data(), it->second.size());
  if (header.substr(0, kBearerPrefix.size()) == kBearerPrefix) {
    const absl::string_view presented = header.substr(kBearerPrefix.size());
    if (verifiers.has_value()) {
      if (std::optional<JobRole> role = IdentifyRole(*verifiers, presented)) {
        caller->role = role;
        return grpc::Status::OK;
      }
    } else if (presented.size() == token->size() &&
               CRYPTO_memcmp(presented.data(), token->data(), token->size()) == 0) {
      return grpc::Status::OK;
    }
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "this server belongs to a training job: the call's job token is wrong");
}

std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
JobTokenInterceptors() {
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> out;
  if (const auto& token = JobToken(); token.has_value()) {
    out.push_back(std::make_unique<TokenInterceptorFactory>("Bearer " + *token));
  }
  return out;
}

void LogJobTokenMode(const std::string& program) {
  const char* tls = JobTls().has_value() ? "TLS" : "plaintext (no TJ_TLS_DIR)";
  if (JobVerifiers().has_value()) {
    spdlog::info("{}: RPCs require a role credential of the job; channels use {}", program, tls);
  } else if (JobToken().has_value()) {
    spdlog::warn(
        "{}: RPCs require the job token, which acts as every role (no {}); channels use {}",
        program, kTokenVerifiersFileEnv, tls);
  } else {
    spdlog::warn("{}: no job token ({} and {} unset): RPCs are not authenticated", program,
                 kTokenFileEnv, kTokenEnv);
  }
}

absl::StatusOr<std::string> GenerateJobToken() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    return absl::InternalError("OpenSSL RAND_bytes failed to make a job token");
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

}  // namespace tj
