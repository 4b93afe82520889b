// Clients that abuse an HTTP endpoint on 127.0.0.1, for tests of servers that must survive them:
// a connection that never sends a byte, one that sends its request a byte at a time, and a GET
// that gives up after a deadline instead of hanging the test.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <thread>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace tj::testing {

// A client connection to 127.0.0.1:port; -1 if refused.
inline int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// The server ended the connection: everything it sent (an error answer, say) is read and then
// EOF or an error comes at once. False while it is still open and silent.
inline bool ClosedByServer(int fd) {
  char buffer[1024];
  while (true) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
  }
}

// GET with a deadline on every read, so a server that never answers fails the test instead of
// hanging it: the whole response, or "" if it did not come in time.
inline std::string GetWithin(int port, const std::string& path, absl::Duration timeout) {
  const int fd = Connect(port);
  if (fd < 0) return "";
  const timeval tv{static_cast<time_t>(absl::ToInt64Seconds(timeout)), 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
  std::string response;
  if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    char buffer[4096];
    ssize_t n;
    while ((n = read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, n);
    if (n < 0) response.clear();  // timed out: no complete answer
  }
  close(fd);
  return response;
}

// Sends `head` one byte every `every` until told to stop or the server closes the connection.
class DrippingClient {
 public:
  DrippingClient(int port, absl::Duration every) : fd_(Connect(port)), every_(every) {
    thread_ = std::thread([this] {
      const std::string head = "GET /metrics HTTP/1.1\r\nX-Slow: ";
      for (size_t i = 0; !stop_; ++i) {
        const char byte = i < head.size() ? head[i] : 'a';
        if (send(fd_, &byte, 1, MSG_NOSIGNAL) != 1) {  // reset by the server
          closed_ = true;
          return;
        }
        ++sent_;
        const absl::Time next = absl::Now() + every_;
        while (!stop_ && absl::Now() < next) {
          if (ClosedByServer(fd_)) {
            closed_ = true;
            return;
          }
          absl::SleepFor(absl::Milliseconds(10));
        }
      }
    });
  }
  ~DrippingClient() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  bool closed() const { return closed_; }
  int sent() const { return sent_; }
  int fd() const { return fd_; }

 private:
  const int fd_;
  const absl::Duration every_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> closed_{false};
  std::atomic<int> sent_{0};
  std::thread thread_;
};

}  // namespace tj::testing
