#include "api/v1alpha1/checkpoint_s3_json.h"

#include <regex>

#include "absl/strings/str_cat.h"
#include "api/v1alpha1/dns_names.h"
#include "api/v1alpha1/json_fields.h"

namespace tj::v1alpha1 {
namespace {

constexpr char kPath[] = "spec.checkpoint.s3";
constexpr size_t kMaxEndpointLength = 512;
constexpr size_t kMaxRegionLength = 64;
constexpr size_t kMaxSecretKeyLength = 253;

bool Matches(std::string_view text, const std::regex& pattern) {
  return std::regex_match(text.begin(), text.end(), pattern);
}

// 1 to `max` letters, digits or characters of `extra`.
bool IsNameOf(std::string_view text, size_t max, std::string_view extra) {
  if (text.empty() || text.size() > max) return false;
  for (const char c : text) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          extra.find(c) != std::string_view::npos)) {
      return false;
    }
  }
  return true;
}

// A Secret data key, as Kubernetes accepts it (IsConfigMapKey): [-._a-zA-Z0-9]+.
bool IsSecretKey(std::string_view key) { return IsNameOf(key, kMaxSecretKeyLength, "-_."); }
// What the SigV4 scope ("aws:amz:<region>:s3") can carry: no ':'.
bool IsRegion(std::string_view region) { return IsNameOf(region, kMaxRegionLength, "-_"); }

S3CredentialsSecret DecodeCredentialsSecret(const nlohmann::json& value, const std::string& path,
                                            FieldErrors& errors) {
  S3CredentialsSecret secret;
  ObjectReader r(value, path, errors);
  secret.name = r.String("name").value_or("");
  secret.access_key_id_key = r.String("accessKeyIdKey");
  secret.secret_access_key_key = r.String("secretAccessKeyKey");
  r.RejectUnknown();
  return secret;
}

void ValidateCredentialsSecret(const S3CredentialsSecret& secret, FieldErrors& errors) {
  const std::string path = ChildPath(kPath, "credentialsSecret");
  if (secret.name.empty()) {
    errors.push_back(RequiredError(ChildPath(path, "name"),
                                   "the Secret in the job's namespace that holds the access key"));
  } else if (!IsDns1123Subdomain(secret.name)) {
    errors.push_back(InvalidError(ChildPath(path, "name"), secret.name,
                                  "a Secret name must be a lowercase RFC 1123 subdomain of at "
                                  "most 253 characters"));
  }
  const std::string id_key = secret.access_key_id_key.value_or(kDefaultAccessKeyIdKey);
  const std::string secret_key =
      secret.secret_access_key_key.value_or(kDefaultSecretAccessKeyKey);
  bool keys_valid = true;
  for (const auto& [field, key] :
       {std::pair{"accessKeyIdKey", id_key}, std::pair{"secretAccessKeyKey", secret_key}}) {
    if (!IsSecretKey(key)) {
      keys_valid = false;
      errors.push_back(InvalidError(ChildPath(path, field), key,
                                    "a Secret key of at most 253 letters, digits, '-', '_' or "
                                    "'.'"));
    }
  }
  if (keys_valid && id_key == secret_key) {
    errors.push_back(InvalidError(ChildPath(path, "secretAccessKeyKey"), secret_key,
                                  "must differ from accessKeyIdKey: the access key ID and the "
                                  "secret access key are two values of the Secret"));
  }
}

}  // namespace

bool IsValidS3CheckpointDir(std::string_view dir) {
  static const std::regex kDir(kS3DirPattern);
  return Matches(dir, kDir);
}

bool IsValidS3Endpoint(std::string_view endpoint) {
  static const std::regex kEndpoint(kS3EndpointPattern);
  return endpoint.size() <= kMaxEndpointLength && Matches(endpoint, kEndpoint);
}

CheckpointS3 DecodeCheckpointS3(const nlohmann::json& value, const std::string& path,
                                FieldErrors& errors) {
  CheckpointS3 s3;
  ObjectReader r(value, path, errors);
  s3.endpoint = r.String("endpoint").value_or("");
  s3.region = r.String("region");
  if (const nlohmann::json* secret = r.Field("credentialsSecret")) {
    s3.credentials_secret =
        DecodeCredentialsSecret(*secret, r.Path("credentialsSecret"), errors);
  }
  r.RejectUnknown();
  return s3;
}

nlohmann::json CheckpointS3ToJson(const CheckpointS3& s3) {
  nlohmann::json out = nlohmann::json::object();
  if (!s3.endpoint.empty()) out["endpoint"] = s3.endpoint;
  if (s3.region) out["region"] = *s3.region;
  if (s3.credentials_secret) {
    const S3CredentialsSecret& secret = *s3.credentials_secret;
    nlohmann::json ref = nlohmann::json::object();
    if (!secret.name.empty()) ref["name"] = secret.name;
    if (secret.access_key_id_key) ref["accessKeyIdKey"] = *secret.access_key_id_key;
    if (secret.secret_access_key_key) ref["secretAccessKeyKey"] = *secret.secret_access_key_key;
    out["credentialsSecret"] = std::move(ref);
  }
  return out;
}

void DefaultCheckpointS3(CheckpointS3& s3) {
  if (!s3.region) s3.region = kDefaultS3Region;
  if (s3.credentials_secret) {
    S3CredentialsSecret& secret = *s3.credentials_secret;
    if (!secret.access_key_id_key) secret.access_key_id_key = kDefaultAccessKeyIdKey;
    if (!secret.secret_access_key_key) secret.secret_access_key_key = kDefaultSecretAccessKeyKey;
  }
}

void ValidateCheckpointStorage(const CheckpointSpec& checkpoint, FieldErrors& errors) {
  const bool s3_dir = IsS3CheckpointDir(checkpoint.dir);
  if (s3_dir && !IsValidS3CheckpointDir(checkpoint.dir)) {
    errors.push_back(InvalidError(
        "spec.checkpoint.dir", checkpoint.dir,
        "must be s3://bucket/prefix: a bucket name of 3-63 lower-case letters, digits, '.' or "
        "'-', starting and ending with a letter or digit, and a prefix with no empty, '.' or "
        "'..' part"));
  }
  if (!checkpoint.s3) {
    if (s3_dir) {
      errors.push_back(RequiredError(
          kPath, "the endpoint and credentials Secret of the s3:// checkpoint location"));
    }
    return;
  }
  if (!s3_dir) {
    errors.push_back(ForbiddenError(
        kPath, "may only be set when spec.checkpoint.dir is an s3://bucket/prefix location"));
  }
  if (checkpoint.volume) {
    errors.push_back(ForbiddenError("spec.checkpoint.volume",
                                    "may not be set together with spec.checkpoint.s3: "
                                    "checkpoints go either to a claim or to a bucket"));
  }
  const CheckpointS3& s3 = *checkpoint.s3;
  const std::string endpoint = ChildPath(kPath, "endpoint");
  if (s3.endpoint.empty()) {
    errors.push_back(
        RequiredError(endpoint, "the S3-compatible server's URL, http(s)://host[:port]"));
  } else if (!IsValidS3Endpoint(s3.endpoint)) {
    errors.push_back(InvalidError(endpoint, s3.endpoint,
                                  "must be an http:// or https:// URL of a host and optional "
                                  "port, with no path and no user info (at most 512 "
                                  "characters)"));
  }
  if (s3.region && !IsRegion(*s3.region)) {
    errors.push_back(InvalidError(ChildPath(kPath, "region"), *s3.region,
                                  "1-64 letters, digits, '-' or '_'"));
  }
  if (!s3.credentials_secret) {
    errors.push_back(RequiredError(ChildPath(kPath, "credentialsSecret"),
                                   "the Secret holding the access key ID and secret access key"));
  } else {
    ValidateCredentialsSecret(*s3.credentials_secret, errors);
  }
}

}  // namespace tj::v1alpha1
