#include "coordinator/metrics/metrics_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "civetweb.h"

namespace tj {
namespace {

constexpr char kExpositionType[] = "text/plain; version=0.0.4; charset=utf-8";

// Writes a whole answer; civetweb adds Date and Connection: close (keep-alive stays off: one
// request per connection, as a scrape or a probe makes).
void Reply(mg_connection* connection, int status, const char* type, const std::string& body) {
  mg_response_header_start(connection, status);
  mg_response_header_add(connection, "Content-Type", type, -1);
  const std::string length = absl::StrCat(body.size());
  mg_response_header_add(connection, "Content-Length", length.c_str(), -1);
  mg_response_header_send(connection);
  if (!body.empty()) mg_write(connection, body.data(), body.size());
}

// civetweb logs to stderr by default; its messages (a client that timed out, a reset
// connection) are a client's problem, not the process's: dropped.
int QuietLog(const mg_connection*, const char*) { return 1; }

// Opens and closes a connection to the server (errors ignored).
void Poke(const in_addr& host, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr = host;
  if (addr.sin_addr.s_addr == htonl(INADDR_ANY)) addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  (void)connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  close(fd);
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& address, const MetricsRegistry* registry, HttpChecks checks,
    MetricsHttpServerOptions options) {
  const size_t colon = address.rfind(':');
  std::string host = colon == std::string::npos ? "" : address.substr(0, colon);
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", address, "' is not host:port"));
  }
  if (host.empty()) host = "0.0.0.0";
  in_addr parsed{};
  if (inet_pton(AF_INET, host.c_str(), &parsed) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", address, "': host must be an IPv4 address"));
  }
  if (options.threads < 1 || options.queue < 1 || options.request_timeout < absl::Milliseconds(1)) {
    return absl::InvalidArgumentError(
        "metrics server: threads and queue must be at least 1, request_timeout at least 1ms");
  }
  static std::once_flag library;
  std::call_once(library, [] { mg_init_library(0); });

  std::unique_ptr<MetricsHttpServer> server(new MetricsHttpServer(registry, std::move(checks)));
  server->host_ = parsed;
  const std::string ports = absl::StrCat(host, ":", port);
  const std::string threads = absl::StrCat(options.threads);
  const std::string queue = absl::StrCat(options.queue);
  const std::string timeout = absl::StrCat(absl::ToInt64Milliseconds(options.request_timeout));
  const char* config[] = {"listening_ports",
                          ports.c_str(),
                          "num_threads",
                          threads.c_str(),
                          "connection_queue",
                          queue.c_str(),
                          "request_timeout_ms",
                          timeout.c_str(),
                          "enable_keep_alive",
                          "no",
                          nullptr};
  mg_callbacks callbacks{};
  callbacks.log_message = QuietLog;
  mg_init_data init{};
  init.callbacks = &callbacks;
  init.user_data = server.get();
  init.configuration_options = config;
  char error_text[256] = {};
  unsigned error_code = 0;
  mg_error_data error{};
  error.code = &error_code;
  error.text = error_text;
  error.text_buffer_size = sizeof(error_text);
  server->context_ = mg_start2(&init, &error);
  if (server->context_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("metrics: cannot listen on ", address, ": ", error_text));
  }
  mg_server_port listening[1] = {};
  if (mg_get_server_ports(server->context_, 1, listening) != 1) {
    return absl::InternalError(absl::StrCat("metrics: no port listening for ", address));
  }
  server->port_ = listening[0].port;
  // Every path: unknown ones get a 404 from Answer, not civetweb's file serving.
  mg_set_request_handler(server->context_, "**", &MetricsHttpServer::Handle, server.get());
  return server;
}

MetricsHttpServer::MetricsHttpServer(const MetricsRegistry* registry, HttpChecks checks)
    : registry_(registry), checks_(std::move(checks)) {}

MetricsHttpServer::~MetricsHttpServer() {
  if (context_ == nullptr) return;
  // civetweb's accept loop polls in 2 s quanta and sees mg_stop's flag only between them:
  // connections of our own wake it, so stopping takes milliseconds rather than up to 2 s.
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    mg_stop(context_);
    stopped = true;
  });
  while (!stopped) {
    Poke(host_, port_);
    for (int i = 0; i < 10 && !stopped; ++i) usleep(1000);
  }
  stopper.join();
}

int MetricsHttpServer::Handle(mg_connection* connection, void* self) {
  return static_cast<const MetricsHttpServer*>(self)->Answer(connection);
}

int MetricsHttpServer::Answer(mg_connection* connection) const {
  const mg_request_info* request = mg_get_request_info(connection);
  const char* method = request->request_method != nullptr ? request->request_method : "";
  const std::string path = request->local_uri != nullptr ? request->local_uri : "";
  if (std::strcmp(method, "GET") != 0) {
    Reply(connection, 405, "text/plain", "only GET is served\n");
    return 405;
  }
  if (path == "/metrics" && registry_ != nullptr) {
    Reply(connection, 200, kExpositionType, registry_->Render());
    return 200;
  }
  if (auto check = checks_.find(path); check != checks_.end()) {
    const absl::Status healthy = check->second();
    if (healthy.ok()) {
      Reply(connection, 200, "text/plain", "ok\n");
      return 200;
    }
    Reply(connection, 503, "text/plain", std::string(healthy.message()) + "\n");
    return 503;
  }
  Reply(connection, 404, "text/plain", "not found\n");
  return 404;
}

}  // namespace tj
