#include "operator/kube/cpprest_transport.h"

#include <cpprest/http_client.h>

#include <algorithm>
#include <boost/asio/ssl.hpp>
#include <cctype>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/base/status_macros.h"
#include "operator/kube/credential_factory.h"
#include "operator/kube/credential_header.h"
#include "coordinator/base/std_mutex.h"

namespace tj::kube {
namespace {

namespace http = web::http;
namespace client = web::http::client;

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Loads the TLS material into `ctx`; throws boost::system::system_error on bad PEM.
void ConfigureTls(const KubeConfig& config, boost::asio::ssl::context& ctx) {
  if (!config.ca_pem.empty()) {
    ctx.add_certificate_authority(boost::asio::buffer(config.ca_pem));
  }
  if (!config.client_cert_pem.empty()) {
    ctx.use_certificate_chain(boost::asio::buffer(config.client_cert_pem));
    ctx.use_private_key(boost::asio::buffer(config.client_key_pem), boost::asio::ssl::context::pem);
  }
}

client::http_client_config MakeConfig(const KubeConfig& config, absl::Duration timeout) {
  client::http_client_config cfg;
  // cpprestsdk's asio client restarts this timer on every read, so it is a read-idle timeout.
  cfg.set_timeout(std::chrono::milliseconds(absl::ToInt64Milliseconds(timeout)));
  cfg.set_validate_certificates(!config.insecure_skip_tls_verify);
  cfg.set_ssl_context_callback(
      [config](boost::asio::ssl::context& ctx) { ConfigureTls(config, ctx); });
  return cfg;
}

http::http_request MakeRequest(const HttpRequest& request) {
  http::http_request req(http::method(request.method));
  req.set_request_uri(web::uri(request.path));
  std::string content_type = "application/json";
  for (const auto& [name, value] : request.headers) {
    if (Lower(name) == "content-type") {
      content_type = value;
    } else {
      req.headers().add(name, value);
    }
  }
  if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
      request.method == "PATCH") {
    req.set_body(request.body, content_type);
  }
  return req;
}

HttpResponse Head(const http::http_response& response) {
  HttpResponse out;
  out.status = response.status_code();
  for (const auto& [name, value] : response.headers()) out.headers[Lower(name)] = value;
  return out;
}

std::string BodyOf(http::http_response& response) {
  std::vector<unsigned char> bytes = response.extract_vector().get();
  return std::string(bytes.begin(), bytes.end());
}

// Validates PEM material by loading it into a throwaway context.
absl::Status ProbeTls(const KubeConfig& config, const std::string& what) {
  try {
    boost::asio::ssl::context probe(boost::asio::ssl::context::tls_client);
    ConfigureTls(config, probe);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", e.what()));
  }
  return absl::OkStatus();
}

}  // namespace

struct CppRestTransport::Clients {
  std::string cert_pem;  // the identity these clients present
  std::string key_pem;
  client::http_client regular;
  absl::Duration regular_timeout;
};

struct CppRestTransport::Prepared {
  HttpRequest request;
  KubeConfig identity;  // config_ with the client certificate to present
};

absl::StatusOr<std::unique_ptr<CppRestTransport>> CppRestTransport::Create(
    const KubeConfig& config) {
  return Create(config, MakeCredentialProvider(config));
}

absl::StatusOr<std::unique_ptr<CppRestTransport>> CppRestTransport::Create(
    const KubeConfig& config, std::shared_ptr<CredentialProvider> credentials) {
  if (config.server.rfind("https://", 0) != 0 && config.server.rfind("http://", 0) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(config.source, ": server \"", config.server, "\" is not an http(s) URL"));
  }
  TJ_RETURN_IF_ERROR(
      ProbeTls(config, absl::StrCat(config.source, ": context \"", config.context,
                                    "\": cannot load the CA, client certificate or key")));
  return std::unique_ptr<CppRestTransport>(new CppRestTransport(config, std::move(credentials)));
}

CppRestTransport::CppRestTransport(KubeConfig config,
                                   std::shared_ptr<CredentialProvider> credentials)
    : config_(std::move(config)), credentials_(std::move(credentials)) {}

CppRestTransport::~CppRestTransport() = default;

bool CppRestTransport::InvalidateCredentials() {
  return credentials_ != nullptr && credentials_->Invalidate();
}

absl::StatusOr<CppRestTransport::Prepared> CppRestTransport::Prepare(const HttpRequest& request) {
  Prepared out{request, config_};
  if (credentials_ == nullptr) return out;
  absl::StatusOr<Credential> credential = Authorize(*credentials_, out.request);
  if (!credential.ok()) return credential.status();
  if (!credential->client_cert_pem.empty()) {
    out.identity.client_cert_pem = credential->client_cert_pem;
    out.identity.client_key_pem = credential->client_key_pem;
  }
  return out;
}

absl::StatusOr<std::shared_ptr<CppRestTransport::Clients>> CppRestTransport::ClientsFor(
    const KubeConfig& identity) {
  StdMutexLock lock(clients_mu_);
  if (clients_ == nullptr || clients_->cert_pem != identity.client_cert_pem ||
      clients_->key_pem != identity.client_key_pem) {
    if (identity.client_cert_pem != config_.client_cert_pem ||
        identity.client_key_pem != config_.client_key_pem) {  // Create checked the kubeconfig's
      TJ_RETURN_IF_ERROR(ProbeTls(
          identity, absl::StrCat(credentials_ ? credentials_->Describe() : config_.source,
                                 ": cannot load the client certificate or key it returned")));
    }
    // A new identity (first use, or an exec plugin's renewed certificate): new connections.
    // Requests in flight keep the old client alive through their shared_ptr.
    clients_ = std::make_shared<Clients>(Clients{
        identity.client_cert_pem, identity.client_key_pem,
        client::http_client(web::uri(config_.server), MakeConfig(identity, absl::Seconds(30))),
        absl::Seconds(30)});
  }
  return clients_;
}

absl::StatusOr<HttpResponse> CppRestTransport::Send(const HttpRequest& request) {
  const std::string where = absl::StrCat(request.method, " ", config_.server, request.path);
  TJ_ASSIGN_OR_RETURN(Prepared prepared, Prepare(request));
  try {
    http::http_response response;
    if (request.timeout == absl::Seconds(30)) {
      TJ_ASSIGN_OR_RETURN(std::shared_ptr<Clients> clients, ClientsFor(prepared.identity));
      response = clients->regular.request(MakeRequest(prepared.request)).get();
    } else {
      client::http_client one(web::uri(config_.server),
                              MakeConfig(prepared.identity, request.timeout));
      response = one.request(MakeRequest(prepared.request)).get();
    }
    HttpResponse out = Head(response);
    out.body = BodyOf(response);
    return out;
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat(where, ": ", e.what()));
  }
}

absl::StatusOr<HttpResponse> CppRestTransport::Stream(const HttpRequest& request,
                                                      const StreamOptions& options,
                                                      const ChunkCallback& on_chunk) {
  const std::string where = absl::StrCat(request.method, " ", config_.server, request.path);
  TJ_ASSIGN_OR_RETURN(Prepared prepared, Prepare(request));
  TJ_RETURN_IF_ERROR(ClientsFor(prepared.identity).status());  // validates a new certificate
  // Its own client: the timeout is per client and here it is the read-idle timeout.
  client::http_client stream_client(web::uri(config_.server),
                                    MakeConfig(prepared.identity, options.read_idle_timeout));
  pplx::cancellation_token_source cts;
  if (options.cancel) options.cancel->SetHook([cts]() { cts.cancel(); });
  auto cancelled = [&]() { return options.cancel && options.cancel->cancelled(); };
  absl::Time last_byte = absl::Now();
  HttpResponse head;
  try {
    http::http_response response =
        stream_client.request(MakeRequest(prepared.request), cts.get_token()).get();
    head = Head(response);
    if (head.status < 200 || head.status >= 300) {
      head.body = BodyOf(response);
    } else {
      auto buffer = response.body().streambuf();
      std::vector<char> chunk(64 * 1024);
      while (true) {
        // getn(ptr, N) waits until N bytes are buffered, which on a quiet watch stalls events
        // for minutes. So wait for one byte, then take whatever else is already buffered.
        auto* data = reinterpret_cast<unsigned char*>(chunk.data());
        size_t n = buffer.getn(data, 1).get();
        if (n == 0) break;  // end of body
        const size_t more = std::min(buffer.in_avail(), chunk.size() - 1);
        if (more > 0) n += buffer.getn(data + 1, more).get();
        last_byte = absl::Now();
        if (!on_chunk(std::string_view(chunk.data(), n))) {
          cts.cancel();  // aborts the connection; nothing more will be read
          break;
        }
      }
    }
  } catch (const std::exception& e) {
    if (options.cancel) options.cancel->SetHook(nullptr);
    if (cancelled()) return absl::CancelledError(absl::StrCat(where, ": cancelled"));
    // cpprestsdk's timer restarts when the socket read completes, a little before `last_byte` is
    // taken here, so it fires slightly earlier than our own clock says (seen in CI: the error was
    // then "Retrieving message chunk header"), and on a loaded machine this thread may see the last
    // byte late. Half the timeout without data is taken as the timeout: a server closing the stream
    // then is misnamed at worst, and both end in a reconnect.
    if (absl::Now() - last_byte >= options.read_idle_timeout / 2) {
      return absl::DeadlineExceededError(
          absl::StrCat(where, ": no data for ", absl::FormatDuration(options.read_idle_timeout),
                       " (read-idle timeout): ", e.what()));
    }
    return absl::UnavailableError(absl::StrCat(where, ": ", e.what()));
  }
  if (options.cancel) options.cancel->SetHook(nullptr);
  if (cancelled()) return absl::CancelledError(absl::StrCat(where, ": cancelled"));
  return head;
}

}  // namespace tj::kube
