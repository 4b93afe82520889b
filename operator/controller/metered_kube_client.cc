#include "operator/controller/metered_kube_client.h"

#include <string>

#include "absl/status/status.h"
#include "absl/time/clock.h"

namespace tj::op {
namespace {

const absl::Status& StatusOf(const absl::Status& status) { return status; }
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& result) {
  return result.status();
}

// API write latencies from 1 ms to 30 s: a saturated API server answers in seconds.
const std::vector<double> kWriteBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                           0.25,  0.5,    1,     2.5,  5,     10,   30};

}  // namespace

template <typename T>
T MeteredKubeClient::TimeWrite(const char* verb, const kube::ResourceRef& ref,
                               const std::function<T()>& call) {
  const absl::Time start = absl::Now();
  T result = call();
  if (metrics_ != nullptr) {
    const std::string resource =
        ref.subresource.empty() ? ref.resource : ref.resource + "/" + ref.subresource;
    metrics_->ObserveHistogram(
        "tj_operator_api_write_duration_seconds",
        "Time a Kubernetes API write took, from request to answer, by verb and resource (the "
        "reconciler's creates run on the write executor, outside the reconcile)",
        absl::ToDoubleSeconds(absl::Now() - start), kWriteBuckets,
        {{"verb", verb}, {"resource", resource}});
  }
  return Count(verb, std::move(result));
}

template <typename T>
T MeteredKubeClient::Count(const char* verb, T result) {
  const absl::Status& status = StatusOf(result);
  if (metrics_ != nullptr && !status.ok() && !absl::IsNotFound(status) &&
      !absl::IsAlreadyExists(status) && !absl::IsCancelled(status)) {
    metrics_->AddCounter("tj_operator_api_errors_total",
                         "Kubernetes API calls that failed, by verb and status code", 1,
                         {{"verb", verb}, {"code", absl::StatusCodeToString(status.code())}});
  }
  return result;
}

absl::StatusOr<nlohmann::json> MeteredKubeClient::Get(const kube::ResourceRef& ref) {
  return Count("get", inner_->Get(ref));
}
absl::StatusOr<nlohmann::json> MeteredKubeClient::List(const kube::ResourceRef& ref,
                                                       const kube::ListOptions& options) {
  return Count("list", inner_->List(ref, options));
}
absl::StatusOr<nlohmann::json> MeteredKubeClient::Create(const kube::ResourceRef& ref,
                                                         const nlohmann::json& object) {
  return TimeWrite<absl::StatusOr<nlohmann::json>>("create", ref,
                                                   [&] { return inner_->Create(ref, object); });
}
absl::StatusOr<nlohmann::json> MeteredKubeClient::Update(const kube::ResourceRef& ref,
                                                         const nlohmann::json& object) {
  return TimeWrite<absl::StatusOr<nlohmann::json>>("update", ref,
                                                   [&] { return inner_->Update(ref, object); });
}
absl::StatusOr<nlohmann::json> MeteredKubeClient::UpdateStatus(const kube::ResourceRef& ref,
                                                               const nlohmann::json& object) {
  return TimeWrite<absl::StatusOr<nlohmann::json>>(
      "update_status", ref, [&] { return inner_->UpdateStatus(ref, object); });
}
absl::StatusOr<nlohmann::json> MeteredKubeClient::MergePatch(const kube::ResourceRef& ref,
                                                             const nlohmann::json& patch) {
  return TimeWrite<absl::StatusOr<nlohmann::json>>("patch", ref,
                                                   [&] { return inner_->MergePatch(ref, patch); });
}
absl::StatusOr<nlohmann::json> MeteredKubeClient::JsonPatch(const kube::ResourceRef& ref,
                                                            const nlohmann::json& operations) {
  return TimeWrite<absl::StatusOr<nlohmann::json>>(
      "patch", ref, [&] { return inner_->JsonPatch(ref, operations); });
}
absl::StatusOr<nlohmann::json> MeteredKubeClient::Delete(const kube::ResourceRef& ref,
                                                         const kube::DeleteOptions& options) {
  return TimeWrite<absl::StatusOr<nlohmann::json>>("delete", ref,
                                                   [&] { return inner_->Delete(ref, options); });
}
absl::Status MeteredKubeClient::Watch(const kube::ResourceRef& ref,
                                      const std::string& resource_version,
                                      const kube::WatchOptions& options,
                                      const kube::WatchHandler& handler) {
  return Count("watch", inner_->Watch(ref, resource_version, options, handler));
}

}  // namespace tj::op
