#include "operator/kube/resource.h"

#include <array>

#include "absl/strings/str_cat.h"

namespace tj::kube {
namespace {

constexpr std::array<ApiResource, 18> kResources = {{
    {"", "v1", "pods", "Pod", true},
    {"", "v1", "services", "Service", true},
    {"", "v1", "configmaps", "ConfigMap", true},
    {"", "v1", "secrets", "Secret", true},
    {"", "v1", "events", "Event", true},
    {"", "v1", "serviceaccounts", "ServiceAccount", true},
    {"", "v1", "namespaces", "Namespace", false},
    {"", "v1", "nodes", "Node", false},
    {"", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true},
    {"", "v1", "persistentvolumes", "PersistentVolume", false},
    {"apps", "v1", "deployments", "Deployment", true},
    {"apps", "v1", "statefulsets", "StatefulSet", true},
    {"apps", "v1", "replicasets", "ReplicaSet", true},
    {"coordination.k8s.io", "v1", "leases", "Lease", true},
    {"apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", false},
    {"trainingjob.dev", "v1alpha1", "trainingjobs", "TrainingJob", true},
    {"policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true},
    {"networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", true},
}};

}  // namespace

std::string ResourceRef::GroupResource() const {
  return group.empty() ? resource : absl::StrCat(resource, ".", group);
}

std::string ResourceRef::Describe() const {
  std::string out = GroupResource();
  if (!subresource.empty()) absl::StrAppend(&out, "/", subresource);
  if (!name.empty()) absl::StrAppend(&out, " \"", name, "\"");
  if (!namespace_name.empty()) absl::StrAppend(&out, " in namespace \"", namespace_name, "\"");
  return out;
}

const ApiResource* FindApiResource(std::string_view resource) {
  for (const ApiResource& r : kResources) {
    if (r.resource == resource) return &r;
    if (!r.group.empty() && resource.size() == r.resource.size() + 1 + r.group.size() &&
        resource.substr(0, r.resource.size()) == r.resource && resource[r.resource.size()] == '.' &&
        resource.substr(r.resource.size() + 1) == r.group) {
      return &r;
    }
  }
  return nullptr;
}

absl::StatusOr<ResourceRef> Resource(std::string_view resource, std::string namespace_name,
                                     std::string name) {
  const ApiResource* r = FindApiResource(resource);
  if (r == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("unknown resource \"", std::string(resource),
                     "\": not in the client's table; build a ResourceRef by hand"));
  }
  ResourceRef ref;
  ref.group = std::string(r->group);
  ref.version = std::string(r->version);
  ref.resource = std::string(r->resource);
  if (r->namespaced) ref.namespace_name = std::move(namespace_name);
  ref.name = std::move(name);
  return ref;
}

std::string ResourcePath(const ResourceRef& ref) {
  std::string path = ref.group.empty() ? absl::StrCat("/api/", ref.version)
                                       : absl::StrCat("/apis/", ref.group, "/", ref.version);
  if (!ref.namespace_name.empty()) absl::StrAppend(&path, "/namespaces/", ref.namespace_name);
  absl::StrAppend(&path, "/", ref.resource);
  if (!ref.name.empty()) absl::StrAppend(&path, "/", ref.name);
  if (!ref.subresource.empty()) absl::StrAppend(&path, "/", ref.subresource);
  return path;
}

std::string QueryEscape(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace tj::kube
