// HttpTransport over cpprestsdk (Boost.Asio + OpenSSL): TLS with a CA bundle or
// insecure-skip-tls-verify, client-certificate and bearer-token auth, chunked streaming for watch.
// cpprestsdk is unmaintained upstream, so it stays behind this header: nothing here includes it.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "operator/kube/http_transport.h"
#include "operator/kube/kube_config.h"

namespace tj::kube {

class CppRestTransport : public HttpTransport {
 public:
  // Validates the PEM material up front, so a bad certificate, key or CA is reported here
  // (naming KubeConfig::source) rather than as a TLS failure on the first request.
  static absl::StatusOr<std::unique_ptr<CppRestTransport>> Create(const KubeConfig& config);

  ~CppRestTransport() override;

  absl::StatusOr<HttpResponse> Send(const HttpRequest& request) override;
  absl::StatusOr<HttpResponse> Stream(const HttpRequest& request, const StreamOptions& options,
                                      const ChunkCallback& on_chunk) override;
  std::string server() const override { return config_.server; }

 private:
  explicit CppRestTransport(KubeConfig config);
  // The bearer token, re-read from token_file at most once a minute (rotated SA tokens).
  std::string Token();

  struct Clients;  // cpprestsdk objects, defined in the .cc
  KubeConfig config_;
  std::unique_ptr<Clients> clients_;
  std::mutex token_mu_;
  std::string token_;
  absl::Time token_read_at_ = absl::InfinitePast();
};

}  // namespace tj::kube
