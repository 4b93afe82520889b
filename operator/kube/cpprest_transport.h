// HttpTransport over cpprestsdk (Boost.Asio + OpenSSL): TLS with a CA bundle or
// insecure-skip-tls-verify, client-certificate and bearer-token auth, chunked streaming for watch.
// cpprestsdk is unmaintained upstream, so it stays behind this header: nothing here includes it.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "operator/kube/credential_provider.h"
#include "operator/kube/http_transport.h"
#include "operator/kube/kube_config.h"
#include "absl/base/thread_annotations.h"
#include "coordinator/base/std_mutex.h"

namespace tj::kube {

class CppRestTransport : public HttpTransport {
 public:
  // Validates the PEM material up front, so a bad certificate, key or CA is reported here
  // (naming KubeConfig::source) rather than as a TLS failure on the first request. Credentials
  // (token, token file, exec plugin) come from MakeCredentialProvider(config).
  static absl::StatusOr<std::unique_ptr<CppRestTransport>> Create(const KubeConfig& config);
  // The same with a given provider (nullptr: client-certificate auth only).
  static absl::StatusOr<std::unique_ptr<CppRestTransport>> Create(
      const KubeConfig& config, std::shared_ptr<CredentialProvider> credentials);

  ~CppRestTransport() override;

  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override;
  absl::StatusOr<HttpResponse> Stream(const HttpRequest& request, const StreamOptions& options,
                                      const ChunkCallback& on_chunk) override;
  std::string server() const override { return config_.server; }
  bool InvalidateCredentials() override;

 private:
  struct Clients;  // cpprestsdk objects for one TLS identity, defined in the .cc
  // The request with its Authorization header, and the TLS identity (the kubeconfig's client
  // certificate, or the exec plugin's) it must go out with.
  struct Prepared;

  CppRestTransport(KubeConfig config, std::shared_ptr<CredentialProvider> credentials);
  absl::StatusOr<Prepared> Prepare(const HttpRequest& request);
  // The shared client for `identity`, rebuilt when an exec plugin hands out a new certificate.
  // Errors: a certificate from the plugin that does not load.
  absl::StatusOr<std::shared_ptr<Clients>> ClientsFor(const KubeConfig& identity);

  KubeConfig config_;
  std::shared_ptr<CredentialProvider> credentials_;
  StdMutex clients_mu_;
  std::shared_ptr<Clients> clients_ ABSL_GUARDED_BY(clients_mu_);
};

}  // namespace tj::kube
