#include "operator/controller/declared_kube_client.h"

#include "absl/strings/str_cat.h"
#include "operator/controller/api_permissions.h"

namespace tj::op {

absl::Status CheckDeclared(const char* verb, const kube::ResourceRef& ref,
                           const std::string& subresource) {
  const std::string& sub = subresource.empty() ? ref.subresource : subresource;
  if (FindApiPermission(verb, ref.group, ref.resource, sub) != nullptr) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      "tj-operator called ", verb, " on ", ref.GroupResource(), sub.empty() ? "" : "/", sub,
      ", which operator/controller/api_permissions.cc does not declare (so the Helm chart does "
      "not grant it); declare it there"));
}

absl::StatusOr<nlohmann::json> DeclaredKubeClient::Get(const kube::ResourceRef& ref) {
  if (absl::Status s = CheckDeclared("get", ref); !s.ok()) return s;
  return inner_->Get(ref);
}

absl::StatusOr<nlohmann::json> DeclaredKubeClient::List(const kube::ResourceRef& ref,
                                                        const kube::ListOptions& options) {
  if (absl::Status s = CheckDeclared("list", ref); !s.ok()) return s;
  return inner_->List(ref, options);
}

absl::StatusOr<nlohmann::json> DeclaredKubeClient::Create(const kube::ResourceRef& ref,
                                                          const nlohmann::json& object) {
  if (absl::Status s = CheckDeclared("create", ref); !s.ok()) return s;
  return inner_->Create(ref, object);
}

absl::StatusOr<nlohmann::json> DeclaredKubeClient::Update(const kube::ResourceRef& ref,
                                                          const nlohmann::json& object) {
  if (absl::Status s = CheckDeclared("update", ref); !s.ok()) return s;
  return inner_->Update(ref, object);
}

absl::StatusOr<nlohmann::json> DeclaredKubeClient::UpdateStatus(const kube::ResourceRef& ref,
                                                                const nlohmann::json& object) {
  if (absl::Status s = CheckDeclared("update", ref, "status"); !s.ok()) return s;
  return inner_->UpdateStatus(ref, object);
}

absl::StatusOr<nlohmann::json> DeclaredKubeClient::MergePatch(const kube::ResourceRef& ref,
                                                              const nlohmann::json& patch) {
  if (absl::Status s = CheckDeclared("patch", ref); !s.ok()) return s;
  return inner_->MergePatch(ref, patch);
}

absl::StatusOr<nlohmann::json> DeclaredKubeClient::JsonPatch(const kube::ResourceRef& ref,
                                                             const nlohmann::json& operations) {
  if (absl::Status s = CheckDeclared("patch", ref); !s.ok()) return s;
  return inner_->JsonPatch(ref, operations);
}

absl::StatusOr<nlohmann::json> DeclaredKubeClient::Delete(const kube::ResourceRef& ref,
                                                          const kube::DeleteOptions& options) {
  if (absl::Status s = CheckDeclared("delete", ref); !s.ok()) return s;
  return inner_->Delete(ref, options);
}

absl::StatusOr<nlohmann::json> DeclaredKubeClient::Evict(const kube::ResourceRef& pod,
                                                         const kube::DeleteOptions& options) {
  if (absl::Status s = CheckDeclared("create", pod, "eviction"); !s.ok()) return s;
  return inner_->Evict(pod, options);
}

absl::Status DeclaredKubeClient::Watch(const kube::ResourceRef& ref,
                                       const std::string& resource_version,
                                       const kube::WatchOptions& options,
                                       const kube::WatchHandler& handler) {
  if (absl::Status s = CheckDeclared("watch", ref); !s.ok()) return s;
  return inner_->Watch(ref, resource_version, options, handler);
}

}  // namespace tj::op
