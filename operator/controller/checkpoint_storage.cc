#include "operator/controller/checkpoint_storage.h"

#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "api/v1alpha1/checkpoint_s3.h"
#include "api/v1alpha1/runtime_env.h"
#include "operator/controller/checkpoint_volume.h"

namespace tj::op {
namespace {

using nlohmann::json;
namespace env = v1alpha1::env;

std::string NamespaceOf(const v1alpha1::TrainingJob& job) {
  return job.metadata.namespace_name.empty() ? std::string("default") : job.metadata.namespace_name;
}

const v1alpha1::S3CredentialsSecret& SecretOf(const v1alpha1::TrainingJob& job) {
  static const v1alpha1::S3CredentialsSecret kNone;
  const auto& s3 = job.spec.checkpoint->s3;
  return s3->credentials_secret ? *s3->credentials_secret : kNone;
}

std::string AccessKeyIdKey(const v1alpha1::S3CredentialsSecret& secret) {
  return secret.access_key_id_key.value_or(v1alpha1::kDefaultAccessKeyIdKey);
}
std::string SecretAccessKeyKey(const v1alpha1::S3CredentialsSecret& secret) {
  return secret.secret_access_key_key.value_or(v1alpha1::kDefaultSecretAccessKeyKey);
}

json SecretKeyRef(const std::string& secret, const std::string& key) {
  return {{"secretKeyRef", {{"name", secret}, {"key", key}}}};
}

// One value of the Secret's data, decoded; the field names the key in the spec.
absl::StatusOr<std::string> SecretValue(const v1alpha1::TrainingJob& job, const json& secret,
                                        const std::string& key, const char* field) {
  const std::string where =
      absl::StrCat(" (spec.checkpoint.s3.credentialsSecret.", field, "); no pod is created until "
                   "it does");
  const json* data = secret.contains("data") && secret["data"].is_object() ? &secret["data"]
                                                                            : nullptr;
  if (data == nullptr || !data->contains(key) || !(*data)[key].is_string()) {
    return absl::FailedPreconditionError(
        absl::StrCat(DescribeCredentialsSecret(job), " has no key ", key, where));
  }
  std::string value;
  if (!absl::Base64Unescape((*data)[key].get<std::string>(), &value)) {
    return absl::FailedPreconditionError(absl::StrCat(
        DescribeCredentialsSecret(job), " key ", key, " is not base64, as Secret data must be"));
  }
  if (value.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        DescribeCredentialsSecret(job), " key ", key, " is empty; it must hold the ",
        std::string(field) == "accessKeyIdKey" ? "access key ID" : "secret access key",
        "; no pod is created until it does"));
  }
  return value;
}

}  // namespace

bool UsesCheckpointBucket(const v1alpha1::TrainingJob& job) {
  return job.spec.checkpoint && job.spec.checkpoint->s3;
}

bool CreatesCheckpointWriter(const JobDecision& decision) {
  for (ReplicaKey replica : decision.to_create) {
    if (MountsCheckpointVolume(replica.type)) return true;
  }
  for (const auto& [replica, restart] : decision.restarts) {
    if (MountsCheckpointVolume(replica.type)) return true;
  }
  return false;
}

std::string DescribeCredentialsSecret(const v1alpha1::TrainingJob& job) {
  return absl::StrCat("Secret ", NamespaceOf(job), "/", SecretOf(job).name);
}

void AddCheckpointStorageEnv(const v1alpha1::TrainingJob& job, ReplicaType type, json& pod_spec) {
  // The replicas that mount a checkpoint claim are the ones that write the bucket.
  if (!UsesCheckpointBucket(job) || !MountsCheckpointVolume(type)) return;
  const v1alpha1::CheckpointS3& s3 = *job.spec.checkpoint->s3;
  const v1alpha1::S3CredentialsSecret& secret = SecretOf(job);
  const std::vector<std::pair<std::string, json>> vars = {
      {env::kS3Endpoint, {{"value", s3.endpoint}}},
      {env::kS3Region, {{"value", s3.region.value_or(v1alpha1::kDefaultS3Region)}}},
      {env::kS3CredentialsSecret,
       {{"value", absl::StrCat(NamespaceOf(job), "/", secret.name)}}},
      {env::kAwsAccessKeyId, {{"valueFrom", SecretKeyRef(secret.name, AccessKeyIdKey(secret))}}},
      {env::kAwsSecretAccessKey,
       {{"valueFrom", SecretKeyRef(secret.name, SecretAccessKeyKey(secret))}}},
  };
  json& trainer = pod_spec["containers"][0];
  json kept = json::array();
  if (trainer.contains("env") && trainer["env"].is_array()) {
    for (const json& var : trainer["env"]) {
      bool ours = false;
      for (const auto& [name, source] : vars) ours |= var.value("name", "") == name;
      if (!ours) kept.push_back(var);
    }
  }
  for (const auto& [name, source] : vars) {
    json var = source;
    var["name"] = name;
    kept.push_back(std::move(var));
  }
  trainer["env"] = std::move(kept);
}

std::string MaskedAccessKeyId(const std::string& access_key_id) {
  if (access_key_id.size() < 8) return "****";
  return absl::StrCat("****", access_key_id.substr(access_key_id.size() - 4));
}

std::string MaskAccessKeyIdsIn(std::string_view message) {
  constexpr std::string_view kQuote = "access key ";
  std::string out;
  size_t at = 0;
  while (true) {
    const size_t found = message.find(kQuote, at);
    if (found == std::string_view::npos) break;
    const size_t id_start = found + kQuote.size();
    size_t id_end = id_start;
    while (id_end < message.size() && message[id_end] != ')' && message[id_end] != ' ' &&
           message[id_end] != ',' && message[id_end] != ';') {
      ++id_end;
    }
    out.append(message.substr(at, id_start - at));
    out += MaskedAccessKeyId(std::string(message.substr(id_start, id_end - id_start)));
    at = id_end;
  }
  out.append(message.substr(at));
  return out;
}

absl::StatusOr<S3Credentials> CredentialsFromSecret(const v1alpha1::TrainingJob& job,
                                                    const json& secret) {
  const v1alpha1::S3CredentialsSecret& ref = SecretOf(job);
  S3Credentials credentials;
  absl::StatusOr<std::string> id = SecretValue(job, secret, AccessKeyIdKey(ref), "accessKeyIdKey");
  if (!id.ok()) return id.status();
  credentials.access_key_id = *std::move(id);
  absl::StatusOr<std::string> key =
      SecretValue(job, secret, SecretAccessKeyKey(ref), "secretAccessKeyKey");
  if (!key.ok()) return key.status();
  credentials.secret_access_key = *std::move(key);
  return credentials;
}

}  // namespace tj::op
