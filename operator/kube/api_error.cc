#include "operator/kube/api_error.h"

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tj::kube {
namespace {

constexpr char kRetryAfterUrl[] = "tj.kube/retry-after-seconds";
constexpr char kReasonUrl[] = "tj.kube/reason";

absl::StatusCode CodeFor(int http_status, const std::string& reason) {
  switch (http_status) {
    case 400:
      return absl::StatusCode::kInvalidArgument;
    case 401:
      return absl::StatusCode::kUnauthenticated;
    case 403:
      return absl::StatusCode::kPermissionDenied;
    case 404:
      return absl::StatusCode::kNotFound;
    case 405:
      return absl::StatusCode::kUnimplemented;
    case 409:
      return reason == "AlreadyExists" ? absl::StatusCode::kAlreadyExists
                                       : absl::StatusCode::kAborted;
    case 410:
      return kGoneCode;
    case 413:
      return absl::StatusCode::kResourceExhausted;
    case 415:
    case 422:
      return absl::StatusCode::kInvalidArgument;
    case 408:
    case 429:
      return absl::StatusCode::kUnavailable;
    case 504:
      return absl::StatusCode::kDeadlineExceeded;
    default:
      if (http_status >= 500) return absl::StatusCode::kUnavailable;
      return absl::StatusCode::kUnknown;
  }
}

absl::Status Build(int http_status, const nlohmann::json* status_obj, const std::string& raw_body,
                   const std::string& verb, const std::string& what,
                   const std::string& retry_after) {
  std::string reason, message;
  if (status_obj != nullptr) {
    reason = status_obj->value("reason", "");
    message = status_obj->value("message", "");
  }
  const absl::StatusCode code = CodeFor(http_status, reason);
  std::string text = absl::StrCat(verb, " ", what, ": HTTP ", http_status);
  if (!reason.empty()) absl::StrAppend(&text, " ", reason);
  if (!message.empty()) {
    absl::StrAppend(&text, ": ", message);
  } else if (status_obj == nullptr && !raw_body.empty()) {
    absl::StrAppend(&text, ": ", raw_body.substr(0, 512));
  }
  // 422 lists every invalid field; the message alone often names only the first.
  if (status_obj != nullptr && status_obj->contains("details")) {
    const nlohmann::json& details = (*status_obj)["details"];
    if (details.is_object() && details.contains("causes") && details["causes"].is_array()) {
      for (const nlohmann::json& cause : details["causes"]) {
        if (!cause.is_object()) continue;
        absl::StrAppend(&text, "; field ", cause.value("field", "?"), ": ",
                        cause.value("message", cause.value("reason", "")));
      }
    }
  }
  absl::Status status(code, text);
  if (!reason.empty()) status.SetPayload(kReasonUrl, absl::Cord(reason));
  int seconds = 0;
  if (!retry_after.empty() && absl::SimpleAtoi(retry_after, &seconds) && seconds >= 0) {
    status.SetPayload(kRetryAfterUrl, absl::Cord(absl::StrCat(seconds)));
  }
  return status;
}

}  // namespace

absl::Status ApiError(int http_status, const std::string& body, const std::string& verb,
                      const std::string& what, const std::string& retry_after) {
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  const bool is_status = parsed.is_object() && parsed.value("kind", "") == "Status";
  return Build(http_status, is_status ? &parsed : nullptr, body, verb, what, retry_after);
}

absl::Status ApiErrorFromStatusObject(const nlohmann::json& status, const std::string& verb,
                                      const std::string& what) {
  int code = 500;
  if (status.is_object() && status.contains("code") && status["code"].is_number_integer()) {
    code = status["code"].get<int>();
  }
  return Build(code, status.is_object() ? &status : nullptr, status.dump(), verb, what, "");
}

bool IsGone(const absl::Status& status) { return status.code() == kGoneCode; }

bool IsConflict(const absl::Status& status) { return status.code() == absl::StatusCode::kAborted; }

std::optional<absl::Duration> RetryAfter(const absl::Status& status) {
  auto payload = status.GetPayload(kRetryAfterUrl);
  if (!payload) return std::nullopt;
  int seconds = 0;
  if (!absl::SimpleAtoi(std::string(*payload), &seconds)) return std::nullopt;
  return absl::Seconds(seconds);
}

}  // namespace tj::kube
