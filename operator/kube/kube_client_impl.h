// KubeClient over an HttpTransport: builds paths and query strings, encodes JSON, maps errors and
// retries what the server asked to be retried (RetryPolicy).
#pragma once

#include <memory>
#include <string>

#include "operator/kube/http_transport.h"
#include "operator/kube/kube_client.h"
#include "operator/kube/retry.h"

namespace tj::kube {

class KubeClientImpl : public KubeClient {
 public:
  // `request_timeout`: each non-streaming request's (HttpRequest::timeout); a leader elector's
  // client uses one shorter than its renew deadline.
  explicit KubeClientImpl(std::shared_ptr<HttpTransport> transport, RetryPolicy retry = {},
                          absl::Duration request_timeout = absl::Seconds(30));

  absl::StatusOr<nlohmann::json> Get(const ResourceRef& ref) override;
  absl::StatusOr<nlohmann::json> List(const ResourceRef& ref, const ListOptions& options) override;
  absl::StatusOr<nlohmann::json> Create(const ResourceRef& ref,
                                        const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> Update(const ResourceRef& ref,
                                        const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> UpdateStatus(const ResourceRef& ref,
                                              const nlohmann::json& object) override;
  absl::StatusOr<nlohmann::json> MergePatch(const ResourceRef& ref,
                                            const nlohmann::json& patch) override;
  absl::StatusOr<nlohmann::json> JsonPatch(const ResourceRef& ref,
                                           const nlohmann::json& operations) override;
  absl::StatusOr<nlohmann::json> Delete(const ResourceRef& ref,
                                        const DeleteOptions& options) override;
  absl::StatusOr<nlohmann::json> Evict(const ResourceRef& pod,
                                       const DeleteOptions& options) override;
  absl::Status Watch(const ResourceRef& ref, const std::string& resource_version,
                     const WatchOptions& options, const WatchHandler& handler) override;

 private:
  // One JSON call, retried per policy. `verb` is the Kubernetes verb, for messages.
  // `eviction`: a 429 is a PodDisruptionBudget's refusal (EvictionBlocked), not throttling.
  absl::StatusOr<nlohmann::json> Call(const std::string& verb, const ResourceRef& ref,
                                      const std::string& method, const std::string& path,
                                      const std::string& content_type, const std::string& body,
                                      bool eviction = false);

  // A 401 as surfaced: names the endpoint and whether a credential refresh was tried.
  absl::Status Unauthorized(const absl::Status& status, const std::string& path,
                            bool refreshed) const;

  std::shared_ptr<HttpTransport> transport_;
  RetryPolicy retry_;
  absl::Duration request_timeout_;
};

}  // namespace tj::kube
