#include "coordinator/resolver/task_address.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "coordinator/resolver/diagnostics.h"

namespace tj {
namespace {

constexpr int kMaxPort = 65535;

absl::Status Bad(std::string_view address, std::string_view why) {
  return absl::InvalidArgumentError(Cat("address ", Quoted(address), " ", why));
}

absl::Status ValidatePort(std::string_view address, std::string_view port) {
  if (port.empty()) return Bad(address, "has an empty port; want \"host:port\"");
  int value = 0;
  for (char c : port) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      return Bad(address, Cat("has a non-numeric port ", Quoted(port)));
    }
    // Saturate rather than overflow on absurdly long digit strings.
    value = std::min(value * 10 + (c - '0'), kMaxPort + 1);
  }
  if (value < 1 || value > kMaxPort) {
    return Bad(address, Cat("has port ", Quoted(port), " outside 1-", kMaxPort));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateTaskAddress(std::string_view address) {
  if (address.empty()) return absl::InvalidArgumentError("address is empty; want \"host:port\"");
  for (char c : address) {
    // Printable ASCII only: keeps the spec serialisable as JSON and catches pasted whitespace.
    if (c <= ' ' || c > '~') {
      return Bad(address, "contains whitespace, a control character or non-ASCII byte");
    }
  }
  if (address.find("://") != std::string_view::npos) {
    return Bad(address, "has a URL scheme; give plain \"host:port\" and set rpc_layer instead");
  }
  if (address.find('/') != std::string_view::npos) {
    return Bad(address, "contains '/'; want plain \"host:port\"");
  }

  std::string_view host;
  std::string_view port;
  if (address.front() == '[') {
    const size_t close = address.find(']');
    if (close == std::string_view::npos) return Bad(address, "has an unclosed '['");
    host = address.substr(1, close - 1);
    const std::string_view rest = address.substr(close + 1);
    if (rest.empty()) return Bad(address, "has no port; want \"[ipv6]:port\"");
    if (rest.front() != ':') return Bad(address, "has text after ']' that is not \":port\"");
    port = rest.substr(1);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == std::string_view::npos) return Bad(address, "has no port; want \"host:port\"");
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return Bad(address,
                 "has more than one ':'; write IPv6 hosts in brackets, e.g. \"[::1]:2222\"");
    }
  }
  if (host.empty()) return Bad(address, "has an empty host; want \"host:port\"");
  return ValidatePort(address, port);
}

}  // namespace tj
