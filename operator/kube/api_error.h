// Turns an API server's HTTP error (and the Kubernetes Status object in its body) into an
// absl::Status whose code drives the caller: retry, relist, refresh credentials or give up.
// The full table is in docs/kube-client.md.
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace tj::kube {

// 410 Gone (expired resourceVersion) maps to this code, which nothing else in the client uses, so
// a watcher can tell "relist" from every other failure with IsGone().
inline constexpr absl::StatusCode kGoneCode = absl::StatusCode::kOutOfRange;

// `verb` ("get", "list", "watch"...) and `what` (ResourceRef::Describe()) go into the message;
// `body` is parsed as a Kubernetes Status when it is one. `retry_after` is the Retry-After header
// value (seconds) or empty.
absl::Status ApiError(int http_status, const std::string& body, const std::string& verb,
                      const std::string& what, const std::string& retry_after = "");

// The same mapping for a Status object already decoded (a watch ERROR event).
absl::Status ApiErrorFromStatusObject(const nlohmann::json& status, const std::string& verb,
                                      const std::string& what);

bool IsGone(const absl::Status& status);
bool IsConflict(const absl::Status& status);  // 409 Conflict (stale resourceVersion)

// The server's Retry-After, carried as a payload on Unavailable statuses.
std::optional<absl::Duration> RetryAfter(const absl::Status& status);

}  // namespace tj::kube
