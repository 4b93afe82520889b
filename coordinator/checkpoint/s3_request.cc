#include "coordinator/checkpoint/s3_request.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "coordinator/checkpoint/checkpoint_storage_error.h"
#include "coordinator/checkpoint/s3_xml.h"

namespace tj {
namespace {

// A stuck endpoint must not hang a save forever: no byte for this long aborts the request.
constexpr long kLowSpeedSeconds = 60;
constexpr long kConnectTimeoutSeconds = 10;

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct CurlDeleter {
  void operator()(CURL* curl) const { curl_easy_cleanup(curl); }
};
struct HeaderListDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

struct Transfer {
  const S3Request* request;
  S3Response* response;
  size_t body_sent = 0;
  CURL* curl = nullptr;
};

size_t OnRead(char* buffer, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const std::string_view body = transfer->request->body;
  const size_t n = std::min(size * count, body.size() - transfer->body_sent);
  std::memcpy(buffer, body.data() + transfer->body_sent, n);
  transfer->body_sent += n;
  return n;
}

size_t OnWrite(char* data, size_t size, size_t count, void* user) {
  auto* transfer = static_cast<Transfer*>(user);
  const size_t n = size * count;
  long status = 0;
  curl_easy_getinfo(transfer->curl, CURLINFO_RESPONSE_CODE, &status);
  const S3Request& request = *transfer->request;
  if (request.out != nullptr && status >= 200 && status < 300) {
    S3Response& response = *transfer->response;
    if (response.out_bytes + n > request.out_size) return 0;  // more than asked for: abort
    std::memcpy(request.out + response.out_bytes, data, n);
    response.out_bytes += n;
    return n;
  }
  // Error documents are small; anything past this is not one worth keeping.
  if (transfer->response->body.size() < (64 << 20)) transfer->response->body.append(data, n);
  return n;
}

size_t OnHeader(char* data, size_t size, size_t count, void* user) {
  auto* response = static_cast<Transfer*>(user)->response;
  const absl::string_view line(data, size * count);
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return size * count;
  const std::string name = absl::AsciiStrToLower(line.substr(0, colon));
  const absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
  if (name == "etag") response->etag = std::string(value);
  if (name == "content-length") {
    uint64_t length = 0;
    if (absl::SimpleAtoi(value, &length)) response->content_length = length;
  }
  return size * count;
}

const char* MethodName(HttpMethod method) {
  switch (method) {
    case HttpMethod::kGet:
      return "GET";
    case HttpMethod::kHead:
      return "HEAD";
    case HttpMethod::kPut:
      return "PUT";
    case HttpMethod::kPost:
      return "POST";
    case HttpMethod::kDelete:
      return "DELETE";
  }
  return "GET";
}

std::string Url(const S3Options& options, const S3Request& request) {
  std::string url = absl::StrCat(options.endpoint, "/", request.bucket);
  if (!request.key.empty()) absl::StrAppend(&url, "/", S3UriEncode(request.key, true));
  if (!request.query.empty()) absl::StrAppend(&url, "?", request.query);
  return url;
}

}  // namespace

std::string S3UriEncode(std::string_view value, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (absl::ascii_isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

std::string DescribeS3Object(const S3Options& options, std::string_view bucket,
                             std::string_view key) {
  if (key.empty()) return absl::StrCat("s3://", std::string(bucket), " at ", options.endpoint);
  return absl::StrCat("s3://", std::string(bucket), "/", std::string(key), " at ",
                      options.endpoint);
}

absl::Status S3ErrorStatus(const S3Options& options, const S3Request& request,
                           const S3Response& response) {
  const std::optional<S3ErrorBody> error = ParseS3Error(response.body);
  const std::string code = error.has_value() ? error->code : "";
  const std::string detail = absl::StrCat(
      MethodName(request.method), " ", DescribeS3Object(options, request.bucket, request.key),
      ": HTTP ", response.status, code.empty() ? "" : absl::StrCat(" ", code),
      error.has_value() && !error->message.empty() ? absl::StrCat(": ", error->message) : "");
  if (code == "NoSuchBucket") {
    return MarkCheckpointStorageError(
        absl::FailedPreconditionError(absl::StrCat("bucket ", request.bucket,
                                                   " does not exist at ", options.endpoint, " (",
                                                   detail, ")")),
        options.endpoint);
  }
  if (code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "AccessDenied" ||
      response.status == 401 || response.status == 403) {
    return MarkCheckpointStorageError(
        absl::PermissionDeniedError(absl::StrCat(
            "credentials from ", options.credentials_source, " (access key ", options.access_key,
            ") refused for bucket ", request.bucket, " (", detail, ")")),
        options.endpoint);
  }
  if (code == "PreconditionFailed" || code == "ConditionalRequestConflict" ||
      response.status == 412) {
    return absl::AbortedError(detail);
  }
  if (code == "NoSuchKey" || code == "NoSuchUpload" || response.status == 404) {
    return absl::NotFoundError(detail);
  }
  if (response.status >= 500 || code == "SlowDown") {
    return MarkCheckpointStorageError(absl::UnavailableError(detail), options.endpoint);
  }
  return absl::InternalError(detail);
}

absl::StatusOr<S3Response> PerformS3Request(const S3Options& options, const S3Request& request,
                                            long accepted) {
  GlobalInit();
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (curl == nullptr) return absl::ResourceExhaustedError("curl_easy_init failed");
  S3Response response;
  Transfer transfer{&request, &response, 0, curl.get()};
  const std::string url = Url(options, request);
  const std::string sigv4 = absl::StrCat("aws:amz:", options.region, ":s3");
  const std::string userpwd = absl::StrCat(options.access_key, ":", options.secret_key);

  curl_slist* raw_headers = nullptr;
  // libcurl signs x-amz-* headers; S3 takes this value instead of a hash of the body, so a part
  // is not read twice.
  raw_headers = curl_slist_append(raw_headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  std::string range;
  if (request.range_offset.has_value()) {
    range = absl::StrCat("Range: bytes=", *request.range_offset, "-",
                         *request.range_offset + request.out_size - 1);
    raw_headers = curl_slist_append(raw_headers, range.c_str());
  }
  std::string if_match;
  if (!request.if_match.empty()) {
    if_match = absl::StrCat("If-Match: ", request.if_match);
    raw_headers = curl_slist_append(raw_headers, if_match.c_str());
  }
  if (request.if_none_match_any) raw_headers = curl_slist_append(raw_headers, "If-None-Match: *");
  std::unique_ptr<curl_slist, HeaderListDeleter> headers(raw_headers);

  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_AWS_SIGV4, sigv4.c_str());
  curl_easy_setopt(c, CURLOPT_USERPWD, userpwd.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, kConnectTimeoutSeconds);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, kLowSpeedSeconds);
  if (options.request_timeout > absl::ZeroDuration()) {
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS,
                     static_cast<long>(absl::ToInt64Milliseconds(options.request_timeout)));
  }
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnWrite);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &transfer);
  switch (request.method) {
    case HttpMethod::kGet:
      break;
    case HttpMethod::kHead:
      curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
      break;
    case HttpMethod::kPut:
      curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt(c, CURLOPT_READFUNCTION, OnRead);
      curl_easy_setopt(c, CURLOPT_READDATA, &transfer);
      curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
      break;
    case HttpMethod::kPost:
      curl_easy_setopt(c, CURLOPT_POST, 1L);
      curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.empty() ? "" : request.body.data());
      curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
      break;
    case HttpMethod::kDelete:
      curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
      break;
  }
  const CURLcode code = curl_easy_perform(c);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &response.status);
  if (code != CURLE_OK) {
    return MarkCheckpointStorageError(
        absl::UnavailableError(absl::StrCat(MethodName(request.method), " ",
                                            DescribeS3Object(options, request.bucket, request.key),
                                            ": ", curl_easy_strerror(code))),
        options.endpoint);
  }
  if (response.status >= 300 && response.status != accepted) {
    return S3ErrorStatus(options, request, response);
  }
  return response;
}

}  // namespace tj
