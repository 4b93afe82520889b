#include "coordinator/base/shutdown_signals.h"

#include <arpa/inet.h>
#include <pthread.h>

namespace tj {

sigset_t BlockShutdownSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
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
  return "0.0.0.0:" + port;
}

}  // namespace tj
