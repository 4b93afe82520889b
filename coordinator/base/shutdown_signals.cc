#include "coordinator/base/shutdown_signals.h"

#include <cstdlib>

#include <arpa/inet.h>
#include <pthread.h>

namespace tj {

sigset_t ShutdownSignalSet() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  return signals;
}

sigset_t BlockShutdownSignals() {
  const sigset_t signals = ShutdownSignalSet();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  return signals;
}

int WaitForSignal(const sigset_t& signals) {
  int signal_number = 0;
  while (sigwait(&signals, &signal_number) != 0) {
  }
  return signal_number;
}

std::string ListenAddressFor(const std::string& dial_address) {
  const size_t colon = dial_address.rfind(':');
  if (colon == std::string::npos) return dial_address;
  std::string host = dial_address.substr(0, colon);
  const std::string port = dial_address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') return dial_address;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return dial_address;
  // A DNS name: the pod's own IP when the platform says it (TJ_POD_IP), else every address.
  if (const char* pod_ip = std::getenv("TJ_POD_IP"); pod_ip != nullptr && *pod_ip != '\0') {
    in6_addr v6{};
    if (inet_pton(AF_INET, pod_ip, &v4) == 1) return std::string(pod_ip) + ":" + port;
    if (inet_pton(AF_INET6, pod_ip, &v6) == 1) return "[" + std::string(pod_ip) + "]:" + port;
  }
  return "0.0.0.0:" + port;
}

}  // namespace tj
