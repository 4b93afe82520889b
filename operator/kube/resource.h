// How an object is addressed: {group, version, resource, namespace, name[, subresource]} and the
// URL path built from it, plus a small table of the resources the operator uses so callers can
// write Resource("configmaps", "default", "x") instead of spelling group and version.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace tj::kube {

struct ResourceRef {
  std::string group;  // "" for the core API
  std::string version;
  std::string resource;        // plural, lower case: "configmaps"
  std::string namespace_name;  // empty: cluster-scoped, or all namespaces for list/watch
  std::string name;            // empty for list, watch and create
  std::string subresource;     // "status", "eviction"... or empty

  // "configmaps", "deployments.apps": for messages and errors.
  std::string GroupResource() const;
  // `resource "name" in namespace "ns"`, for messages.
  std::string Describe() const;
};

struct ApiResource {
  std::string_view group;
  std::string_view version;
  std::string_view resource;
  std::string_view kind;
  bool namespaced;
};

// Known resources: core (pods, services, configmaps, secrets, events, serviceaccounts, namespaces,
// nodes), apps (deployments, statefulsets, replicasets), coordination.k8s.io (leases),
// apiextensions.k8s.io (customresourcedefinitions), trainingjob.dev (trainingjobs), policy
// (poddisruptionbudgets), networking.k8s.io (networkpolicies).
// Accepts "configmaps" or "deployments.apps". Null when unknown.
const ApiResource* FindApiResource(std::string_view resource);

// A ref from the table; NotFound names the unknown resource. `namespace_name` is ignored for
// cluster-scoped resources.
absl::StatusOr<ResourceRef> Resource(std::string_view resource, std::string namespace_name = "",
                                     std::string name = "");

// /api/v1/namespaces/ns/configmaps/name[/status] or /apis/group/version/...; no query.
std::string ResourcePath(const ResourceRef& ref);

// Percent-encodes a query value (RFC 3986 unreserved characters kept).
std::string QueryEscape(std::string_view value);

}  // namespace tj::kube
