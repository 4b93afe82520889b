#include "coordinator/checkpoint/s3_location.h"

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tj {
namespace {

bool ValidBucket(std::string_view bucket) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  for (const char c : bucket) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) return false;
  }
  return bucket.front() != '.' && bucket.front() != '-' && bucket.back() != '.' &&
         bucket.back() != '-';
}

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace

std::string S3Location::Key(std::string_view name) const {
  if (prefix.empty()) return std::string(name);
  return absl::StrCat(prefix, "/", std::string(name));
}

std::string S3Location::Url() const {
  return prefix.empty() ? absl::StrCat(std::string(kS3Scheme), bucket)
                        : absl::StrCat(std::string(kS3Scheme), bucket, "/", prefix);
}

bool IsS3Location(std::string_view dir) { return dir.starts_with(kS3Scheme); }

absl::StatusOr<S3Location> ParseS3Location(std::string_view url) {
  if (!IsS3Location(url)) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint location ", std::string(url), ": not an s3://bucket/prefix URL"));
  }
  std::string_view rest = url.substr(kS3Scheme.size());
  while (rest.ends_with('/')) rest.remove_suffix(1);
  const size_t slash = rest.find('/');
  S3Location location;
  location.bucket = std::string(rest.substr(0, slash));
  if (!ValidBucket(location.bucket)) {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint location ", std::string(url), ": bucket name \"", location.bucket,
                     "\" is not 3-63 lower-case letters, digits, '.' or '-'"));
  }
  if (slash != std::string_view::npos) {
    location.prefix = std::string(rest.substr(slash + 1));
    for (const absl::string_view part : absl::StrSplit(location.prefix, '/')) {
      if (part.empty() || part == "." || part == "..") {
        return absl::InvalidArgumentError(
            absl::StrCat("checkpoint location ", std::string(url),
                         ": prefix has an empty, '.' or '..' component"));
      }
    }
  }
  return location;
}

absl::StatusOr<S3Options> S3OptionsFromEnv() {
  S3Options options;
  options.endpoint = Env("TJ_S3_ENDPOINT");
  while (options.endpoint.ends_with('/')) options.endpoint.pop_back();
  if (!options.endpoint.starts_with("http://") && !options.endpoint.starts_with("https://")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TJ_S3_ENDPOINT \"", options.endpoint,
        "\": an s3:// checkpoint location needs the endpoint, as http(s)://host[:port]"));
  }
  if (const std::string region = Env("TJ_S3_REGION"); !region.empty()) options.region = region;
  if (const std::string secret = Env("TJ_S3_CREDENTIALS_SECRET"); !secret.empty()) {
    options.credentials_source = absl::StrCat("Secret ", secret);
  }
  options.access_key = Env("AWS_ACCESS_KEY_ID");
  options.secret_key = Env("AWS_SECRET_ACCESS_KEY");
  if (options.access_key.empty() || options.secret_key.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must both be set for an s3:// "
                     "checkpoint location (credentials from ",
                     options.credentials_source, ")"));
  }
  if (const std::string part = Env("TJ_S3_PART_BYTES"); !part.empty()) {
    uint64_t bytes = 0;
    if (!absl::SimpleAtoi(part, &bytes) || bytes < kMinS3PartBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TJ_S3_PART_BYTES \"", part, "\": a whole number of bytes, at least ", kMinS3PartBytes));
    }
    options.part_bytes = bytes;
  }
  return options;
}

}  // namespace tj
