#include "coordinator/metrics/metrics_http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "coordinator/metrics/http_request_path.h"

namespace tj {

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const std::string& address, const MetricsRegistry* registry, HttpChecks checks) {
  const size_t colon = address.rfind(':');
  std::string host = colon == std::string::npos ? "" : address.substr(0, colon);
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", address, "' is not host:port"));
  }
  if (host.empty()) host = "0.0.0.0";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", address, "': host must be an IPv4 address"));
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 16) != 0) {
    const int error = errno;
    if (fd >= 0) close(fd);
    return absl::UnavailableError(
        absl::StrCat("metrics: cannot listen on ", address, ": ", std::strerror(error)));
  }
  socklen_t length = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  int wake[2];
  if (pipe2(wake, O_CLOEXEC) != 0) {
    close(fd);
    return absl::InternalError("metrics: pipe failed");
  }
  return std::unique_ptr<MetricsHttpServer>(
      new MetricsHttpServer(fd, ntohs(addr.sin_port), wake[0], wake[1], registry, std::move(checks)));
}

MetricsHttpServer::MetricsHttpServer(int listen_fd, int port, int wake_read, int wake_write,
                                     const MetricsRegistry* registry, HttpChecks checks)
    : listen_fd_(listen_fd),
      port_(port),
      wake_read_(wake_read),
      wake_write_(wake_write),
      registry_(registry),
      checks_(std::move(checks)),
      thread_([this] { Serve(); }) {}

MetricsHttpServer::~MetricsHttpServer() {
  const char byte = 0;
  (void)!write(wake_write_, &byte, 1);
  thread_.join();
  close(listen_fd_);
  close(wake_read_);
  close(wake_write_);
}

void MetricsHttpServer::Serve() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_read_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    Answer(client);
    close(client);
  }
}

void MetricsHttpServer::Answer(int fd) {
  // A scrape is small: read the request head (up to 8 KiB, 2 s), answer, close.
  timeval timeout{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  std::string request;
  char buffer[2048];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 8192) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    request.append(buffer, static_cast<size_t>(n));
  }
  std::string status = "200 OK";
  std::string type = "text/plain; version=0.0.4; charset=utf-8";
  std::string body;
  const std::string path = HttpRequestPath(request);
  if (path == "/metrics" && registry_ != nullptr) {
    body = registry_->Render();
  } else if (auto check = checks_.find(path); check != checks_.end()) {
    type = "text/plain";
    const absl::Status healthy = check->second();
    if (healthy.ok()) {
      body = "ok\n";
    } else {
      status = "503 Service Unavailable";
      body = std::string(healthy.message()) + "\n";
    }
  } else {
    status = "404 Not Found";
    type = "text/plain";
    body = "not found\n";
  }
  const std::string response = absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", type,
                                            "\r\nContent-Length: ", body.size(),
                                            "\r\nConnection: close\r\n\r\n", body);
  size_t sent = 0;
  while (sent < response.size()) {
    const ssize_t n = write(fd, response.data() + sent, response.size() - sent);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace tj
