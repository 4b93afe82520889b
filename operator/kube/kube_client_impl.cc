#include "operator/kube/kube_client_impl.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "coordinator/base/status_macros.h"
#include "operator/kube/api_error.h"
#include "operator/kube/eviction.h"
#include "operator/kube/watch_decoder.h"

namespace tj::kube {
namespace {

constexpr char kJson[] = "application/json";

// Appends `key=value` pairs (values escaped) to `path`.
std::string WithQuery(std::string path, const std::vector<std::pair<std::string, std::string>>& q) {
  char sep = '?';
  for (const auto& [key, value] : q) {
    absl::StrAppend(&path, std::string(1, sep), key, "=", QueryEscape(value));
    sep = '&';
  }
  return path;
}

}  // namespace

absl::Status KubeClientImpl::Unauthorized(const absl::Status& status, const std::string& path,
                                          bool refreshed) const {
  return absl::Status(
      status.code(),
      absl::StrCat(std::string(status.message()), " (endpoint ", transport_->server(), path, "; ",
                   refreshed ? "rejected again after refreshing the credentials once"
                             : "the credentials cannot be refreshed",
                   ")"));
}

KubeClientImpl::KubeClientImpl(std::shared_ptr<HttpTransport> transport, RetryPolicy retry,
                               absl::Duration request_timeout)
    : transport_(std::move(transport)),
      retry_(std::move(retry)),
      request_timeout_(request_timeout) {}

absl::StatusOr<nlohmann::json> KubeClientImpl::Call(const std::string& verb, const ResourceRef& ref,
                                                    const std::string& method,
                                                    const std::string& path,
                                                    const std::string& content_type,
                                                    const std::string& body, bool eviction) {
  HttpRequest request;
  request.method = method;
  request.path = path;
  request.timeout = request_timeout_;
  request.headers.emplace_back("Accept", kJson);
  if (!content_type.empty()) request.headers.emplace_back("Content-Type", content_type);
  request.body = body;
  const std::string what = ref.Describe();
  std::function<absl::StatusOr<nlohmann::json>()> attempt =
      [&]() -> absl::StatusOr<nlohmann::json> {
    absl::StatusOr<HttpResponse> response = transport_->Send(request);
    bool refreshed = false;
    if (response.ok() && response->status == 401 && transport_->InvalidateCredentials()) {
      // Rotated token file, expired exec credential: fetch fresh ones and try once more.
      refreshed = true;
      response = transport_->Send(request);
    }
    if (!response.ok()) {
      return absl::Status(response.status().code(),
                          absl::StrCat(verb, " ", what, " (", transport_->server(), path,
                                       "): ", std::string(response.status().message())));
    }
    if (response->status == 401) {
      return Unauthorized(ApiError(401, response->body, verb, what), path, refreshed);
    }
    if (eviction && response->status == 429) {
      return EvictionBlocked(
          ApiError(429, response->body, verb, what, response->Header("retry-after")));
    }
    if (response->status < 200 || response->status >= 300) {
      return ApiError(response->status, response->body, verb, what,
                      response->Header("retry-after"));
    }
    nlohmann::json parsed =
        nlohmann::json::parse(response->body, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded()) {
      return absl::DataLossError(
          absl::StrCat(verb, " ", what, " (", transport_->server(), path,
                       "): the response is not JSON: ", response->body.substr(0, 200)));
    }
    return parsed;
  };
  return WithRetry<nlohmann::json>(retry_, attempt);
}

absl::StatusOr<nlohmann::json> KubeClientImpl::Get(const ResourceRef& ref) {
  return Call("get", ref, "GET", ResourcePath(ref), "", "");
}

absl::StatusOr<nlohmann::json> KubeClientImpl::List(const ResourceRef& ref,
                                                    const ListOptions& options) {
  std::vector<std::pair<std::string, std::string>> q;
  if (!options.label_selector.empty()) q.emplace_back("labelSelector", options.label_selector);
  if (!options.field_selector.empty()) q.emplace_back("fieldSelector", options.field_selector);
  if (options.limit > 0) q.emplace_back("limit", absl::StrCat(options.limit));
  if (!options.continue_token.empty()) q.emplace_back("continue", options.continue_token);
  if (!options.resource_version.empty()) {
    q.emplace_back("resourceVersion", options.resource_version);
  }
  return Call("list", ref, "GET", WithQuery(ResourcePath(ref), q), "", "");
}

absl::StatusOr<nlohmann::json> KubeClientImpl::Create(const ResourceRef& ref,
                                                      const nlohmann::json& object) {
  ResourceRef collection = ref;
  collection.name.clear();
  std::string name;
  if (object.contains("metadata") && object["metadata"].is_object()) {
    name = object["metadata"].value("name", "");
  }
  // The path has no name; messages do, taken from the object.
  ResourceRef described = collection;
  described.name = name;
  return Call("create", described, "POST", ResourcePath(collection), kJson, object.dump());
}

absl::StatusOr<nlohmann::json> KubeClientImpl::Update(const ResourceRef& ref,
                                                      const nlohmann::json& object) {
  return Call("update", ref, "PUT", ResourcePath(ref), kJson, object.dump());
}

absl::StatusOr<nlohmann::json> KubeClientImpl::UpdateStatus(const ResourceRef& ref,
                                                            const nlohmann::json& object) {
  ResourceRef status = ref;
  status.subresource = "status";
  return Call("update", status, "PUT", ResourcePath(status), kJson, object.dump());
}

absl::StatusOr<nlohmann::json> KubeClientImpl::MergePatch(const ResourceRef& ref,
                                                          const nlohmann::json& patch) {
  return Call("patch", ref, "PATCH", ResourcePath(ref), "application/merge-patch+json",
              patch.dump());
}

absl::StatusOr<nlohmann::json> KubeClientImpl::JsonPatch(const ResourceRef& ref,
                                                         const nlohmann::json& operations) {
  if (!operations.is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat("patch ", ref.Describe(), ": a JSON patch must be an array of operations"));
  }
  return Call("patch", ref, "PATCH", ResourcePath(ref), "application/json-patch+json",
              operations.dump());
}

absl::StatusOr<nlohmann::json> KubeClientImpl::Delete(const ResourceRef& ref,
                                                      const DeleteOptions& options) {
  return Call("delete", ref, "DELETE", ResourcePath(ref), kJson, DeleteOptionsJson(options).dump());
}

absl::StatusOr<nlohmann::json> KubeClientImpl::Evict(const ResourceRef& pod,
                                                     const DeleteOptions& options) {
  if (pod.name.empty() || pod.resource != "pods") {
    return absl::InvalidArgumentError(
        absl::StrCat("evict ", pod.Describe(), ": an eviction needs a pod's name"));
  }
  ResourceRef eviction = pod;
  eviction.subresource = "eviction";
  return Call("evict", pod, "POST", ResourcePath(eviction), kJson,
              EvictionBody(pod, options).dump(), /*eviction=*/true);
}

absl::Status KubeClientImpl::Watch(const ResourceRef& ref, const std::string& resource_version,
                                   const WatchOptions& options, const WatchHandler& handler) {
  std::vector<std::pair<std::string, std::string>> q = {{"watch", "true"}};
  if (!resource_version.empty()) q.emplace_back("resourceVersion", resource_version);
  if (options.allow_watch_bookmarks) q.emplace_back("allowWatchBookmarks", "true");
  if (options.timeout_seconds > 0) {
    q.emplace_back("timeoutSeconds", absl::StrCat(options.timeout_seconds));
  }
  if (!options.label_selector.empty()) q.emplace_back("labelSelector", options.label_selector);
  if (!options.field_selector.empty()) q.emplace_back("fieldSelector", options.field_selector);
  HttpRequest request;
  request.method = "GET";
  request.path = WithQuery(ResourcePath(ref), q);
  request.headers.emplace_back("Accept", kJson);
  const std::string what = ref.Describe();
  const std::string endpoint =
      absl::StrCat("watch ", what, " (", transport_->server(), request.path, ")");

  WatchDecoder decoder(endpoint, options.max_event_bytes,
                       [&](WatchEvent event, bool& stop) -> absl::Status {
                         if (event.type == "ERROR") {
                           return ApiErrorFromStatusObject(event.object, "watch", what);
                         }
                         if (!handler(event)) stop = true;
                         return absl::OkStatus();
                       });
  absl::Status stream_error;
  StreamOptions stream_options;
  stream_options.read_idle_timeout = options.read_idle_timeout;
  stream_options.cancel = options.cancel;
  auto on_chunk = [&](std::string_view chunk) {
    stream_error = decoder.Feed(chunk);
    return stream_error.ok() && !decoder.stopped();
  };
  absl::StatusOr<HttpResponse> response = transport_->Stream(request, stream_options, on_chunk);
  bool refreshed = false;
  if (response.ok() && response->status == 401 && transport_->InvalidateCredentials()) {
    // A non-2xx answer delivered no chunk, so the decoder is untouched and the call can be
    // repeated.
    refreshed = true;
    response = transport_->Stream(request, stream_options, on_chunk);
  }
  if (!stream_error.ok()) return stream_error;
  if (decoder.stopped()) return absl::OkStatus();
  if (!response.ok()) {
    return absl::Status(response.status().code(),
                        absl::StrCat(endpoint, ": ", std::string(response.status().message())));
  }
  if (response->status == 401) {
    return Unauthorized(ApiError(401, response->body, "watch", what), request.path, refreshed);
  }
  if (response->status < 200 || response->status >= 300) {
    return ApiError(response->status, response->body, "watch", what,
                    response->Header("retry-after"));
  }
  return decoder.Finish();
}

absl::StatusOr<nlohmann::json> ListAll(KubeClient& client, const ResourceRef& ref,
                                       ListOptions options) {
  nlohmann::json all;
  nlohmann::json items = nlohmann::json::array();
  // A bound so that a server that keeps returning a continue token cannot loop us forever.
  for (int page = 0; page < 100000; ++page) {
    TJ_ASSIGN_OR_RETURN(nlohmann::json list, client.List(ref, options));
    if (list.contains("items") && list["items"].is_array()) {
      for (nlohmann::json& item : list["items"]) items.push_back(std::move(item));
    }
    std::string next;
    if (list.contains("metadata") && list["metadata"].is_object()) {
      next = list["metadata"].value("continue", "");
    }
    all = std::move(list);
    if (next.empty()) {
      all["items"] = std::move(items);
      if (all.contains("metadata") && all["metadata"].is_object()) {
        all["metadata"].erase("continue");
        all["metadata"].erase("remainingItemCount");
      }
      return all;
    }
    options.continue_token = next;
  }
  return absl::InternalError(
      absl::StrCat("list ", ref.Describe(), ": more than 100000 pages, giving up"));
}

}  // namespace tj::kube
