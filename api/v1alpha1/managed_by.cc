#include "api/v1alpha1/managed_by.h"

#include "absl/strings/ascii.h"
#include "api/v1alpha1/dns_names.h"

namespace tj::v1alpha1 {
namespace {

bool IsPathChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("/-._~%!$&'()*+,;=:").find(c) != std::string_view::npos;
}

}  // namespace

bool IsDomainPrefixedPath(std::string_view value) {
  const size_t slash = value.find('/');
  if (slash == std::string_view::npos || slash + 1 == value.size()) return false;
  if (!IsDns1123Subdomain(value.substr(0, slash))) return false;
  for (char c : value.substr(slash + 1)) {
    if (!IsPathChar(c)) return false;
  }
  return true;
}

bool ManagedByAnotherController(const nlohmann::json& manifest) {
  if (!manifest.is_object()) return false;
  const auto spec = manifest.find("spec");
  if (spec == manifest.end() || !spec->is_object()) return false;
  const auto managed_by = spec->find("managedBy");
  return managed_by != spec->end() && managed_by->is_string() &&
         managed_by->get_ref<const std::string&>() != kManagedByOperator;
}

}  // namespace tj::v1alpha1
