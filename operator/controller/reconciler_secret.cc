// The reconciler's part in the job's Secret: reading it (through the cluster view) and completing
// it when an older operator or a scale-up left it short (role credentials, TLS certificates).
#include <optional>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "api/v1alpha1/labels.h"
#include "operator/controller/job_tls_secret.h"
#include "operator/controller/reconciler.h"
#include "operator/kube/resource.h"
#include "spdlog/spdlog.h"

namespace tj::op {
namespace {

using nlohmann::json;

std::string NamespaceOf(const v1alpha1::TrainingJob& job) {
  return job.metadata.namespace_name.empty() ? std::string("default") : job.metadata.namespace_name;
}

}  // namespace

absl::StatusOr<std::optional<Reconciler::JobSecret>> Reconciler::CachedSecret(
    const v1alpha1::TrainingJob& job) {
  const std::string name = v1alpha1::JobTokenSecretName(job.metadata.name);
  absl::StatusOr<ObjectPtr> read = view_.Secret(NamespaceOf(job), name);
  if (!read.ok()) return read.status();
  const ObjectPtr& secret = *read;
  if (secret == nullptr) return std::nullopt;
  if (!ControlledBy(*secret, job.metadata.uid.value_or(""))) {
    return absl::FailedPreconditionError(absl::StrCat(
        "secret \"", name, "\" in namespace \"", NamespaceOf(job),
        "\" exists and is not owned by this TrainingJob; rename the job or delete the secret"));
  }
  JobSecret out;
  if ((*secret).contains("metadata") && (*secret)["metadata"].is_object()) {
    out.resource_version = (*secret)["metadata"].value("resourceVersion", "");
  }
  const json& data = (*secret).contains("data") ? (*secret)["data"] : json();
  if (data.is_object()) out.data = data;
  std::string decoded;
  if (data.is_object() && data.contains(v1alpha1::kJobTokenSecretKey) &&
      data[v1alpha1::kJobTokenSecretKey].is_string() &&
      absl::Base64Unescape(data[v1alpha1::kJobTokenSecretKey].get<std::string>(), &decoded)) {
    out.token = decoded;
  }
  return out;
}

absl::StatusOr<json> Reconciler::SecretUpgrade(const v1alpha1::TrainingJob& job,
                                               const std::string& token, const json& data) {
  json patch = json::object();
  if (token.empty()) return patch;  // a job that runs open has nothing to derive
  if (!data.contains(v1alpha1::kJobVerifiersSecretKey)) patch = JobTokenSecretData(token);
  absl::StatusOr<json> tls = JobTlsSecretUpdate(job, data);
  if (!tls.ok()) {
    return absl::Status(tls.status().code(),
                        absl::StrCat("secret \"", v1alpha1::JobTokenSecretName(job.metadata.name),
                                     "\": ", tls.status().message()));
  }
  patch.update(*tls);
  return patch;
}

absl::StatusOr<std::optional<Reconciler::JobSecret>> Reconciler::UpToDateSecret(
    const v1alpha1::TrainingJob& job) {
  absl::StatusOr<std::optional<JobSecret>> cached = CachedSecret(job);
  if (!cached.ok() || !cached->has_value()) return cached;
  JobSecret& secret = **cached;
  absl::StatusOr<json> patch = SecretUpgrade(job, secret.token, secret.data);
  if (!patch.ok()) return patch.status();
  if (patch->empty()) return cached;
  const std::string name = v1alpha1::JobTokenSecretName(job.metadata.name);
  auto ref = kube::Resource("secrets", NamespaceOf(job), name);
  if (!ref.ok()) return ref.status();
  // Only onto the Secret as read: a cache that lags an earlier patch of this one must not make a
  // second CA (pods of the job would trust different ones). A stale read is a Conflict, retried
  // once the cache has caught up.
  json body = {{"data", *patch}};
  if (!secret.resource_version.empty()) {
    body["metadata"] = {{"resourceVersion", secret.resource_version}};
  }
  auto patched = client_.MergePatch(*ref, body);
  if (!patched.ok()) return patched.status();
  // Secrets are read by name and remembered (JobSecrets): the next read must see this patch, or
  // its stale resourceVersion would make every reconcile a Conflict until the copy expires.
  view_.SecretWritten(*patched);
  secret.data.update(*patch);
  spdlog::info("{}/{}: secret {}: {} key(s) added or renewed", NamespaceOf(job),
               job.metadata.name, name, patch->size());
  return cached;
}

}  // namespace tj::op
