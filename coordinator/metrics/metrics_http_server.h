// Serves GET /metrics (the registry's text exposition) and health checks over plain HTTP/1.1:
// what Prometheus, cluster dashboards and the kubelet's probes read. Built on civetweb: a fixed
// pool of threads serves connections concurrently, each request's head must arrive within a total
// deadline (a client dripping a byte at a time is cut off), and accepted connections wait in a
// bounded queue, so slow or idle clients hold at most a few threads for a bounded time.
#pragma once

#include <netinet/in.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/metrics/metrics_registry.h"

struct mg_context;
struct mg_connection;

namespace tj {

// Extra GET paths answered 200 "ok" when the check returns OK and 503 with the status message
// otherwise: an operator's /healthz and /readyz. Checks run on the server's threads, several at
// once: keep them quick and thread-safe.
using HttpChecks = std::map<std::string, std::function<absl::Status()>>;

struct MetricsHttpServerOptions {
  // Connections served at once (civetweb's worker threads, all started up front).
  int threads = 8;
  // Accepted connections waiting for a thread; beyond it they wait in the kernel's backlog.
  int queue = 32;
  // A request's head must have arrived this long after the connection was taken up (a total
  // deadline, not per read), and each write of the answer must finish within it.
  absl::Duration request_timeout = absl::Seconds(5);
};

class MetricsHttpServer {
 public:
  // `address` is "host:port" with an IPv4 host (port 0 picks one). The registry must outlive the
  // server; it may be null when only `checks` are served.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& address, const MetricsRegistry* registry, HttpChecks checks = {},
      MetricsHttpServerOptions options = {});
  // Stops accepting, finishes or cuts the requests in flight, joins the threads.
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  int port() const { return port_; }

 private:
  MetricsHttpServer(const MetricsRegistry* registry, HttpChecks checks);
  static int Handle(mg_connection* connection, void* self);
  int Answer(mg_connection* connection) const;

  const MetricsRegistry* registry_;
  const HttpChecks checks_;
  mg_context* context_ = nullptr;
  in_addr host_{};  // the address listened on
  int port_ = 0;
};

}  // namespace tj
