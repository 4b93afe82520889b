#include "operator/controller/reconciler_secret.h"

#include <optional>
#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "api/v1alpha1/labels.h"
#include "coordinator/base/job_token.h"
#include "operator/controller/job_tls_secret.h"
#include "operator/kube/resource.h"
#include "spdlog/spdlog.h"

namespace tj::op {

using nlohmann::json;

StepResult SecretStep::Run(JobReconcile& job) {
  const InFlight in_flight = in_flight_.Get(job.key);
  job.token = in_flight.token;
  job.control_tls = in_flight.tls;
  job.secret_has_tls = in_flight.tls != nullptr;
  // Completed first when an older operator or a scale-up left it short.
  absl::StatusOr<std::optional<JobSecret>> cached = UpToDateSecret(*job.job);
  if (!cached.ok()) return StepResult::Fail(cached.status());
  if (cached->has_value()) {
    job.token = (*cached)->token;
    job.secret_has_tls = !job.token.empty() && HasJobTls((*cached)->data);
    job.control_tls = job.secret_has_tls ? ControlTlsFromSecret(*job.job, (*cached)->data) : nullptr;
    return StepResult::Continue();
  }
  // With creates in flight (the Secret's among them, perhaps) nothing new is made.
  if (!job.creations_settled) return StepResult::Continue();
  if (absl::Status queued = QueueNewSecret(job); !queued.ok()) return StepResult::Fail(queued);
  return StepResult::Continue();
}

absl::Status SecretStep::QueueNewSecret(JobReconcile& job) {
  absl::StatusOr<std::string> fresh = GenerateJobToken();
  if (!fresh.ok()) return fresh.status();
  job.token = *fresh;
  absl::StatusOr<json> tls_data = NewJobTlsSecretData(*job.job);
  if (!tls_data.ok()) return tls_data.status();
  job.control_tls = ControlTlsFromSecret(*job.job, *tls_data);
  job.secret_has_tls = true;
  in_flight_.With(job.key, [&](InFlight& memory) {
    memory.token = job.token;
    memory.tls = job.control_tls;
  });
  const std::string name = v1alpha1::JobTokenSecretName(job.job->metadata.name);
  auto ref = kube::Resource("secrets", JobNamespace(*job.job));
  if (!ref.ok()) return ref.status();
  job.writes.push_back(
      {absl::StrCat("secrets/", name), WriteKind::kSecret,
       [this, key = job.key, ref = *ref,
        secret = BuildJobTokenSecret(*job.job, job.token, *tls_data)]() -> absl::StatusOr<json> {
         absl::StatusOr<json> created = client_.Create(ref, secret);
         // Secrets are read by name, not watched: the view learns of the new one here. One that
         // exists already holds another token: the cache's is the one.
         if (created.ok()) {
           view_.SecretWritten(*created);
         } else {
           in_flight_.Forget(key);
         }
         return created;
       },
       /*urgent=*/true});
  return absl::OkStatus();
}

absl::StatusOr<std::optional<SecretStep::JobSecret>> SecretStep::CachedSecret(
    const v1alpha1::TrainingJob& job) {
  const std::string name = v1alpha1::JobTokenSecretName(job.metadata.name);
  absl::StatusOr<ObjectPtr> read = view_.Secret(JobNamespace(job), name);
  if (!read.ok()) return read.status();
  const ObjectPtr& secret = *read;
  if (secret == nullptr) return std::nullopt;
  if (!ControlledBy(*secret, job.metadata.uid.value_or(""))) {
    return absl::FailedPreconditionError(absl::StrCat(
        "secret \"", name, "\" in namespace \"", JobNamespace(job),
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

absl::StatusOr<json> SecretUpgrade(const v1alpha1::TrainingJob& job, const std::string& token,
                                   const json& data) {
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

absl::StatusOr<std::optional<SecretStep::JobSecret>> SecretStep::UpToDateSecret(
    const v1alpha1::TrainingJob& job) {
  absl::StatusOr<std::optional<JobSecret>> cached = CachedSecret(job);
  if (!cached.ok() || !cached->has_value()) return cached;
  JobSecret& secret = **cached;
  absl::StatusOr<json> patch = SecretUpgrade(job, secret.token, secret.data);
  if (!patch.ok()) return patch.status();
  if (patch->empty()) return cached;
  const std::string name = v1alpha1::JobTokenSecretName(job.metadata.name);
  auto ref = kube::Resource("secrets", JobNamespace(job), name);
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
  spdlog::info("{}/{}: secret {}: {} key(s) added or renewed", JobNamespace(job),
               job.metadata.name, name, patch->size());
  return cached;
}

}  // namespace tj::op
