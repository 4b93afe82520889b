// Exec credential plugins (kubeconfig users[].exec, client.authentication.k8s.io/v1 and v1beta1
// ExecCredential), as kubectl runs them: the command is run directly (no shell) with its args and
// env plus KUBERNETES_EXEC_INFO; its stdout is an ExecCredential whose status holds a bearer token
// or a client certificate and key, and optionally an expirationTimestamp. The credential is cached
// until a little before it expires, or until the server rejects it (401).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "operator/kube/credential_provider.h"
#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"

namespace tj::kube {

inline constexpr char kExecApiV1[] = "client.authentication.k8s.io/v1";
inline constexpr char kExecApiV1Beta1[] = "client.authentication.k8s.io/v1beta1";

// users[].exec, validated by the kubeconfig loader.
struct ExecConfig {
  std::string command;  // as written; a relative path with '/' is resolved against base_dir
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  std::string api_version;   // kExecApiV1 or kExecApiV1Beta1
  std::string install_hint;  // shown when the command cannot be found
  bool provide_cluster_info = false;
  std::string interactive_mode;  // "Never", "IfAvailable" or "Always" ("" = IfAvailable, v1beta1)
  std::string where;             // "a.yaml: users[u].exec", starts every message
  std::string base_dir;          // the directory of the kubeconfig file naming the user
  // What provideClusterInfo passes in KUBERNETES_EXEC_INFO's spec.cluster.
  std::string cluster_server;
  std::string cluster_ca_pem;
  bool cluster_insecure_skip_tls_verify = false;
  absl::Duration timeout = absl::Minutes(1);  // a hung plugin is killed, not waited on forever
};

// Checks the fields kubectl checks (command present, a supported apiVersion, interactiveMode valid
// and given for v1). Errors start with config.where.
absl::Status ValidateExecConfig(const ExecConfig& config);

// The KUBERNETES_EXEC_INFO value: an ExecCredential with spec.interactive=false and, with
// provideClusterInfo, spec.cluster.
std::string ExecInfoJson(const ExecConfig& config);

// Decodes a plugin's stdout. Errors (InvalidArgument unless noted) name config.where and the
// command: not JSON, wrong apiVersion or kind, no token and no certificate, a certificate without
// its key, a bad expirationTimestamp, or (Unauthenticated) a credential already expired at `now`.
absl::StatusOr<Credential> ParseExecCredential(const std::string& output, const ExecConfig& config,
                                               absl::Time now);

// The credential from users[].exec, cached until `refresh margin` before its expiry (see
// RefreshAt) or until Invalidate(). Thread-safe; concurrent callers share one plugin run.
class ExecCredentialProvider : public CredentialProvider {
 public:
  explicit ExecCredentialProvider(ExecConfig config, Clock clock = RealClock());

  absl::StatusOr<Credential> Current() override;
  bool Invalidate() override;
  std::string Describe() const override;

  // How many times the plugin ran (for tests and diagnostics).
  int runs() const;

 private:
  absl::StatusOr<Credential> Run() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);  // Current() holds mu_ across it

  const ExecConfig config_;
  const Clock clock_;
  mutable StdMutex mu_;
  bool have_ ABSL_GUARDED_BY(mu_) = false;
  Credential cached_ ABSL_GUARDED_BY(mu_);
  absl::Time refresh_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int runs_ ABSL_GUARDED_BY(mu_) = 0;
};

// When to fetch again: a little before `expiry` (a fifth of the lifetime left, at most 30 s), so a
// request never goes out with a credential about to lapse in flight.
absl::Time RefreshAt(absl::Time fetched, absl::Time expiry);

}  // namespace tj::kube
