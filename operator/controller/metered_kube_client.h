// A KubeClient that counts failed API calls by verb and code (tj_operator_api_errors_total),
// times every write (tj_operator_api_write_duration_seconds{verb,resource}) and forwards
// everything to the real client. NotFound and AlreadyExists are answers the controller
// expects (it checks before it acts, through a cache that may lag), so they are not errors here.
#pragma once

#include <functional>
#include <memory>

#include "coordinator/metrics/metrics_registry.h"
#include "operator/kube/kube_client.h"

namespace tj::op {

class MeteredKubeClient : public kube::KubeClient {
 public:
  MeteredKubeClient(std::shared_ptr<kube::KubeClient> inner, MetricsRegistry* metrics)
      : inner_(std::move(inner)), metrics_(metrics) {}

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
  absl::Status Watch(const kube::ResourceRef& ref, const std::string& resource_version,
                     const kube::WatchOptions& options,
                     const kube::WatchHandler& handler) override;

 private:
  template <typename T>
  T Count(const char* verb, T result);
  // Runs a write, observing tj_operator_api_write_duration_seconds{verb,resource}, then Count.
  template <typename T>
  T TimeWrite(const char* verb, const kube::ResourceRef& ref, const std::function<T()>& call);

  std::shared_ptr<kube::KubeClient> inner_;
  MetricsRegistry* metrics_;
};

}  // namespace tj::op
