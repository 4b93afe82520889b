// A TCP proxy on 127.0.0.1 for tests: forwards every accepted connection to an upstream port on
// 127.0.0.1 until Stall(); from then on it moves no byte in either direction and closes nothing
// (connections accepted later hang too) - a network path that went silent, which no error and no
// EOF reveals, only a deadline.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

namespace tj::testing {

class StallingTcpProxy {
 public:
  explicit StallingTcpProxy(int upstream_port) : upstream_port_(upstream_port) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr = Loopback(0);
    bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    listen(listen_fd_, 64);
    socklen_t length = sizeof(addr);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &length);
    port_ = ntohs(addr.sin_port);
    (void)!pipe2(wake_, O_CLOEXEC);
    thread_ = std::thread([this] { Serve(); });
  }
  ~StallingTcpProxy() {
    stopping_ = true;
    Wake();
    thread_.join();
    for (auto [a, b] : pairs_) {
      close(a);
      if (b >= 0) close(b);
    }
    close(listen_fd_);
    close(wake_[0]);
    close(wake_[1]);
  }
  StallingTcpProxy(const StallingTcpProxy&) = delete;
  StallingTcpProxy& operator=(const StallingTcpProxy&) = delete;

  int port() const { return port_; }
  // Connections accepted so far (each is a client's connection).
  int accepted() const { return accepted_.load(); }
  void Stall() {
    stalled_ = true;
    Wake();
  }

 private:
  static sockaddr_in Loopback(int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return addr;
  }
  void Wake() {
    const char byte = 0;
    (void)!write(wake_[1], &byte, 1);
  }
  // Copies what `from` has to `to`; false when either side is done.
  static bool Pump(int from, int to) {
    char buffer[65536];
    const ssize_t n = read(from, buffer, sizeof(buffer));
    if (n <= 0) return false;
    for (ssize_t sent = 0; sent < n;) {
      const ssize_t w = write(to, buffer + sent, static_cast<size_t>(n - sent));
      if (w <= 0) return false;
      sent += w;
    }
    return true;
  }
  void Serve() {
    while (!stopping_) {
      std::vector<pollfd> fds = {{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
      const size_t polled = stalled_ ? 0 : pairs_.size();
      for (size_t i = 0; i < polled; ++i) {
        fds.push_back({pairs_[i].first, POLLIN, 0});
        fds.push_back({pairs_[i].second, POLLIN, 0});
      }
      if (poll(fds.data(), fds.size(), -1) < 0) continue;
      if (fds[0].revents != 0) {
        char drain[64];
        (void)!read(wake_[0], drain, sizeof(drain));
        continue;  // stalled or stopping changed: poll again with the right set
      }
      std::vector<std::pair<int, int>> next;
      for (size_t i = 0; i < polled; ++i) {
        const auto [client, upstream] = pairs_[i];
        const short from_client = fds[2 + 2 * i].revents;
        const short from_upstream = fds[3 + 2 * i].revents;
        bool open = true;
        if (from_client & (POLLIN | POLLHUP | POLLERR)) open = Pump(client, upstream);
        if (open && (from_upstream & (POLLIN | POLLHUP | POLLERR))) open = Pump(upstream, client);
        if (open) {
          next.emplace_back(client, upstream);
        } else {
          close(client);
          close(upstream);
        }
      }
      for (size_t i = polled; i < pairs_.size(); ++i) next.push_back(pairs_[i]);
      pairs_ = std::move(next);
      if (fds[1].revents & POLLIN) {
        const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client >= 0) {
          ++accepted_;
          int upstream = -1;
          if (!stalled_) {
            upstream = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            sockaddr_in addr = Loopback(upstream_port_);
            if (connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
              close(upstream);
              close(client);
              continue;
            }
          }
          pairs_.emplace_back(client, upstream);  // upstream -1: held, never forwarded
        }
      }
    }
  }

  const int upstream_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stalled_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::vector<std::pair<int, int>> pairs_;  // (client, upstream); Serve's thread only
  std::thread thread_;
};

}  // namespace tj::testing
