// Kubernetes name rules the TrainingJob's own names must meet, because they become the names of
// the Pods and headless Services the operator creates and the hosts in TF_CONFIG.
#pragma once

#include <string_view>

namespace tj::v1alpha1 {

inline constexpr size_t kMaxDnsLabelLength = 63;

// RFC 1123 label: [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63 characters (pod, container names).
bool IsDns1123Label(std::string_view name);
// RFC 1035 label: as above but starting with a letter (Service names).
bool IsDns1035Label(std::string_view name);
// RFC 1123 subdomain: dot-separated RFC 1123 labels, at most 253 characters (most object names,
// PersistentVolumeClaims' among them).
bool IsDns1123Subdomain(std::string_view name);

}  // namespace tj::v1alpha1
