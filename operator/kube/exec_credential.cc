#include "operator/kube/exec_credential.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "operator/kube/exec_credential_runner.h"
#include "coordinator/base/std_mutex.h"

namespace tj::kube {
namespace {

constexpr size_t kStderrTail = 800;

std::string Tail(const std::string& s, size_t n) {
  std::string t = s.size() <= n ? s : "..." + s.substr(s.size() - n);
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
  return t;
}

std::string Prefix(const ExecConfig& config) {
  return absl::StrCat(config.where, ": command \"", config.command, "\"");
}

std::string ResolvedCommand(const ExecConfig& config) {
  // kubectl resolves a relative path with a separator against the kubeconfig's directory; a bare
  // name is looked up in PATH.
  if (config.command.find('/') == std::string::npos ||
      std::filesystem::path(config.command).is_absolute() || config.base_dir.empty()) {
    return config.command;
  }
  return (std::filesystem::path(config.base_dir) / config.command).string();
}

}  // namespace

absl::Status ValidateExecConfig(const ExecConfig& config) {
  if (config.command.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(config.where, ".command is missing"));
  }
  if (config.api_version != kExecApiV1 && config.api_version != kExecApiV1Beta1) {
    return absl::InvalidArgumentError(absl::StrCat(config.where, ".apiVersion \"",
                                                   config.api_version, "\" is not supported (use ",
                                                   kExecApiV1, " or ", kExecApiV1Beta1, ")"));
  }
  const std::string& mode = config.interactive_mode;
  if (mode.empty() && config.api_version == kExecApiV1) {
    return absl::InvalidArgumentError(absl::StrCat(config.where,
                                                   ".interactiveMode is required with ", kExecApiV1,
                                                   " (Never, IfAvailable or Always)"));
  }
  if (!mode.empty() && mode != "Never" && mode != "IfAvailable" && mode != "Always") {
    return absl::InvalidArgumentError(absl::StrCat(config.where, ".interactiveMode \"", mode,
                                                   "\" is not Never, IfAvailable or Always"));
  }
  if (mode == "Always") {
    // An operator has no terminal to hand the plugin.
    return absl::InvalidArgumentError(
        absl::StrCat(config.where,
                     ".interactiveMode is Always, but this client never runs plugins "
                     "interactively (use Never or IfAvailable)"));
  }
  return absl::OkStatus();
}

std::string ExecInfoJson(const ExecConfig& config) {
  nlohmann::json info = {{"apiVersion", config.api_version},
                         {"kind", "ExecCredential"},
                         {"spec", {{"interactive", false}}}};
  if (config.provide_cluster_info) {
    nlohmann::json cluster = {{"server", config.cluster_server}};
    if (!config.cluster_ca_pem.empty()) {
      cluster["certificate-authority-data"] = absl::Base64Escape(config.cluster_ca_pem);
    }
    if (config.cluster_insecure_skip_tls_verify) cluster["insecure-skip-tls-verify"] = true;
    info["spec"]["cluster"] = std::move(cluster);
  }
  return info.dump();
}

absl::StatusOr<Credential> ParseExecCredential(const std::string& output, const ExecConfig& config,
                                               absl::Time now) {
  const std::string prefix = Prefix(config);
  nlohmann::json cred = nlohmann::json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (cred.is_discarded() || !cred.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, ": its output is not an ExecCredential JSON object: \"", Tail(output, 200), "\""));
  }
  const std::string api_version =
      cred.contains("apiVersion") && cred["apiVersion"].is_string() ? cred["apiVersion"] : "";
  if (api_version != config.api_version) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, ": returned apiVersion \"", api_version,
                                                   "\", but the kubeconfig asks for \"",
                                                   config.api_version, "\""));
  }
  const std::string kind = cred.contains("kind") && cred["kind"].is_string() ? cred["kind"] : "";
  if (kind != "ExecCredential") {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, ": returned kind \"", kind, "\", not ExecCredential"));
  }
  if (!cred.contains("status") || !cred["status"].is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, ": returned no status"));
  }
  const nlohmann::json& status = cred["status"];
  auto str = [&](const char* key) -> std::string {
    return status.contains(key) && status[key].is_string() ? status[key].get<std::string>() : "";
  };
  Credential out;
  out.token = str("token");
  out.client_cert_pem = str("clientCertificateData");
  out.client_key_pem = str("clientKeyData");
  if (out.client_cert_pem.empty() != out.client_key_pem.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix,
        ": status has clientCertificateData without clientKeyData, or the other way round"));
  }
  if (out.token.empty() && out.client_cert_pem.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, ": status has neither a token nor clientCertificateData and clientKeyData"));
  }
  const std::string expiry = str("expirationTimestamp");
  if (!expiry.empty()) {
    std::string err;
    if (!absl::ParseTime(absl::RFC3339_full, expiry, &out.expiry, &err)) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, ": status.expirationTimestamp \"",
                                                     expiry, "\" is not an RFC 3339 time: ", err));
    }
    if (out.expiry <= now) {
      return absl::UnauthenticatedError(
          absl::StrCat(prefix, ": returned a credential that already expired at ", expiry, " (now ",
                       absl::FormatTime(absl::RFC3339_sec, now, absl::UTCTimeZone()), ")"));
    }
  }
  return out;
}

absl::Time RefreshAt(absl::Time fetched, absl::Time expiry) {
  if (expiry == absl::InfiniteFuture()) return absl::InfiniteFuture();
  const absl::Duration margin = std::min(absl::Seconds(30), (expiry - fetched) / 5);
  return expiry - margin;
}

ExecCredentialProvider::ExecCredentialProvider(ExecConfig config, Clock clock)
    : config_(std::move(config)), clock_(std::move(clock)) {}

absl::StatusOr<Credential> ExecCredentialProvider::Current() {
  // Held across the plugin run on purpose: concurrent requests wait for one run, not start many.
  StdMutexLock lock(mu_);
  if (have_ && clock_() < refresh_at_) return cached_;
  absl::StatusOr<Credential> fresh = Run();
  if (!fresh.ok()) return fresh.status();
  cached_ = *fresh;
  have_ = true;
  refresh_at_ = RefreshAt(clock_(), cached_.expiry);
  return cached_;
}

bool ExecCredentialProvider::Invalidate() {
  StdMutexLock lock(mu_);
  have_ = false;
  return true;
}

std::string ExecCredentialProvider::Describe() const { return Prefix(config_); }

int ExecCredentialProvider::runs() const {
  StdMutexLock lock(mu_);
  return runs_;
}

absl::StatusOr<Credential> ExecCredentialProvider::Run() {
  ++runs_;
  std::vector<std::string> argv = {ResolvedCommand(config_)};
  argv.insert(argv.end(), config_.args.begin(), config_.args.end());
  std::vector<std::pair<std::string, std::string>> env = config_.env;
  env.emplace_back("KUBERNETES_EXEC_INFO", ExecInfoJson(config_));
  absl::StatusOr<ProcessResult> result = RunProcess(argv, env, config_.timeout);
  if (!result.ok()) {
    if (absl::IsNotFound(result.status())) {
      std::string msg = absl::StrCat(Prefix(config_), " not found or not executable (",
                                     std::string(result.status().message()), ")");
      if (!config_.install_hint.empty()) absl::StrAppend(&msg, ". ", config_.install_hint);
      return absl::FailedPreconditionError(msg);
    }
    return absl::Status(
        result.status().code(),
        absl::StrCat(Prefix(config_), ": ", std::string(result.status().message())));
  }
  if (result->exit_code != 0) {
    const std::string how = result->term_signal != 0
                                ? absl::StrCat("was killed by signal ", result->term_signal)
                                : absl::StrCat("exited with code ", result->exit_code);
    return absl::UnauthenticatedError(absl::StrCat(Prefix(config_), " ", how, "; stderr: \"",
                                                   Tail(result->err, kStderrTail), "\""));
  }
  return ParseExecCredential(result->out, config_, clock_());
}

}  // namespace tj::kube
