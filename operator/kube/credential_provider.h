// Where the client's credentials come from, and how they are refreshed when the API server rejects
// them (401) or they expire: a static token, a token file (rotated service-account tokens), or an
// exec credential plugin (exec_credential.h). The transport asks for the current credential before
// every request; KubeClientImpl calls Invalidate() after a 401 and retries once.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"

namespace tj::kube {

struct Credential {
  std::string token = "";            // bearer token; empty: none
  std::string client_cert_pem = "";  // a client certificate from an exec plugin; empty: none
  std::string client_key_pem = "";
  absl::Time expiry = absl::InfiniteFuture();  // when the issuer said it stops being valid
};

// Injected so that expiry and re-read intervals are tested without sleeping.
using Clock = std::function<absl::Time()>;
inline Clock RealClock() {
  return [] { return absl::Now(); };
}

class CredentialProvider {
 public:
  virtual ~CredentialProvider() = default;

  // The credential to send now; cached by the implementation. An error (a plugin that failed, an
  // unreadable token file on first use) names the kubeconfig field and is not retried by the
  // client.
  virtual absl::StatusOr<Credential> Current() = 0;

  // The server rejected the credential: the next Current() fetches a fresh one (re-reads the file,
  // re-runs the plugin). Returns false when nothing can change (a static token), so the caller does
  // not retry in vain.
  virtual bool Invalidate() = 0;

  // For messages: `users[u].token`, `token file /var/run/...`, `users[u].exec command "x"`.
  virtual std::string Describe() const = 0;
};

// A token fixed in the kubeconfig (users[].token). Invalidate() cannot help.
class StaticTokenProvider : public CredentialProvider {
 public:
  StaticTokenProvider(std::string token, std::string description)
      : token_(std::move(token)), description_(std::move(description)) {}
  absl::StatusOr<Credential> Current() override { return Credential{.token = token_}; }
  bool Invalidate() override { return false; }
  std::string Describe() const override { return description_; }

 private:
  std::string token_;
  std::string description_;
};

// A token file (users[].tokenFile, the in-cluster service-account token), re-read at most once per
// `reread_interval` (the kubelet rotates the file well before the token expires) and at once after
// Invalidate(). A briefly unreadable or empty file keeps the last token.
class TokenFileProvider : public CredentialProvider {
 public:
  // `initial_token` is what the config loader already read; empty: read on first use.
  TokenFileProvider(std::string path, std::string initial_token,
                    absl::Duration reread_interval = absl::Minutes(1), Clock clock = RealClock());

  absl::StatusOr<Credential> Current() override;
  bool Invalidate() override;
  std::string Describe() const override;

 private:
  const std::string path_;
  const absl::Duration reread_interval_;
  const Clock clock_;
  StdMutex mu_;
  std::string token_ ABSL_GUARDED_BY(mu_);
  absl::Time read_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

// Reads a whole token file, dropping trailing newlines. NotFound names the file.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

}  // namespace tj::kube
