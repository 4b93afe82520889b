#include "coordinator/base/job_token.h"

#include "coordinator/base/job_tls.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace tj {
namespace {

std::mutex token_mu;
std::optional<std::optional<std::string>>& TokenSlot() {
  static std::optional<std::optional<std::string>> slot;
  return slot;
}

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
  std::lock_guard lock(token_mu);
  auto& slot = TokenSlot();
  if (!slot.has_value()) {
    auto loaded = LoadJobTokenFromEnvironment();
    if (!loaded.ok()) {
      spdlog::critical("{}", loaded.status().ToString());
      std::exit(2);
    }
    slot = *loaded;
  }
  return *slot;
}

void SetJobTokenForTesting(std::optional<std::string> token) {
  std::lock_guard lock(token_mu);
  TokenSlot() = std::move(token);
}

grpc::Status CheckJobToken(const grpc::ServerContext& context) {
  const std::optional<std::string>& token = JobToken();
  if (!token.has_value()) return grpc::Status::OK;
  const std::string expected = "Bearer " + *token;
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kAuthorizationHeader);
  if (it != metadata.end() && it->second.size() == expected.size() &&
      CRYPTO_memcmp(it->second.data(), expected.data(), expected.size()) == 0) {
    return grpc::Status::OK;
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      it == metadata.end()
                          ? "this server belongs to a training job: the call carries no job token"
                          : "this server belongs to a training job: the call's job token is wrong");
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
  if (JobToken().has_value()) {
    spdlog::info("{}: RPCs require the job token; channels use {}", program, tls);
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
