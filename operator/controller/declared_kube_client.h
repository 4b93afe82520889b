// A KubeClient that lets through only the calls OperatorApiPermissions() declares
// (api_permissions.h) and refuses any other with PermissionDenied naming the call and the list,
// before it reaches the API server. tj-operator wraps its clients in it, so a call added to the
// code without its rule (and so without the Helm chart granting it) fails in every test that runs
// the operator, also under credentials that would allow it.
#pragma once

#include <memory>
#include <string>

#include "operator/kube/kube_client.h"

namespace tj::op {

class DeclaredKubeClient : public kube::KubeClient {
 public:
  explicit DeclaredKubeClient(std::shared_ptr<kube::KubeClient> inner)
      : inner_(std::move(inner)) {}

  absl::StatusOr<nlohmann::json> Get(const kube::ResourceRef& ref) override;
  absl::StatusOr<nlohmann::json> List(const kube::ResourceRef& ref,
                                      const kube::ListOptions& options) override;
  absl::StatusOr<nlohmann::json> Create(const kube::ResourceRef& ref,
                                        const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> Update(const kube::ResourceRef& ref,
                                        const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> UpdateStatus(const kube::ResourceRef& ref,
                                              const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> MergePatch(const kube::ResourceRef& ref,
                                            const nlohmann::json& patch) override;
  absl::StatusOr<nlohmann::json> JsonPatch(const kube::ResourceRef& ref,
                                           const nlohmann::json& operations) override;
  absl::StatusOr<nlohmann::json> Delete(const kube::ResourceRef& ref,
                                        const kube::DeleteOptions& options) override;
  absl::StatusOr<nlohmann::json> Evict(const kube::ResourceRef& pod,
                                       const kube::DeleteOptions& options) override;
  absl::Status Watch(const kube::ResourceRef& ref, const std::string& resource_version,
                     const kube::WatchOptions& options,
                     const kube::WatchHandler& handler) override;

 private:
  std::shared_ptr<kube::KubeClient> inner_;
};

// OK when OperatorApiPermissions() allows `verb` on `ref` (its subresource, or `subresource`
// when given); PermissionDenied naming both otherwise.
absl::Status CheckDeclared(const char* verb, const kube::ResourceRef& ref,
                           const std::string& subresource = "");

}  // namespace tj::op
