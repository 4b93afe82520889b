#include "api/v1alpha1/dns_names.h"

namespace tj::v1alpha1 {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

}  // namespace

bool IsDns1123Label(std::string_view name) {
  if (name.empty() || name.size() > kMaxDnsLabelLength) return false;
  if (!IsLowerAlnum(name.front()) || !IsLowerAlnum(name.back())) return false;
  for (char c : name) {
    if (!IsLowerAlnum(c) && c != '-') return false;
  }
  return true;
}

bool IsDns1035Label(std::string_view name) {
  return IsDns1123Label(name) && name.front() >= 'a' && name.front() <= 'z';
}

bool IsDns1123Subdomain(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  size_t start = 0;
  while (true) {
    const size_t dot = name.find('.', start);
    if (!IsDns1123Label(name.substr(start, dot == std::string_view::npos ? dot : dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

}  // namespace tj::v1alpha1
