#include "operator/controller/job_tls_secret.h"

#include <set>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "api/v1alpha1/enums.h"
#include "api/v1alpha1/labels.h"
#include "coordinator/base/job_certificates.h"
#include "coordinator/base/job_roles.h"
#include "jobcontrol/replicas.h"

namespace tj::op {
namespace {

using nlohmann::json;

std::string JobKey(const v1alpha1::TrainingJob& job) {
  return absl::StrCat(job.metadata.namespace_name.empty() ? "default" : job.metadata.namespace_name,
                      "/", job.metadata.name);
}

// "<replica>.<namespace>.svc" of every desired replica of `type`: the hosts TF_CONFIG names.
std::vector<std::string> DesiredHosts(const v1alpha1::TrainingJob& job, ReplicaType type) {
  std::vector<std::string> hosts;
  for (const auto& [key, address] : ClusterServiceAddresses(job, v1alpha1::kTrainerPort)) {
    if (key.type == type) hosts.push_back(address.substr(0, address.rfind(':')));
  }
  return hosts;
}

// The decoded value of `key`, or "" when absent or not base64.
std::string Decoded(const json& data, const std::string& key) {
  std::string out;
  if (!data.is_object() || !data.contains(key) || !data[key].is_string() ||
      !absl::Base64Unescape(data[key].get<std::string>(), &out)) {
    return "";
  }
  return out;
}

void Put(json& data, const std::string& role, const PemKeyPair& pair) {
  data[v1alpha1::JobCertSecretKey(role)] = absl::Base64Escape(pair.cert_pem);
  data[v1alpha1::JobKeySecretKey(role)] = absl::Base64Escape(pair.key_pem);
}

absl::StatusOr<PemKeyPair> IssueRole(const v1alpha1::TrainingJob& job, const PemKeyPair& ca,
                                     std::string_view role, const std::vector<std::string>& hosts) {
  return IssueJobCertificate(ca, absl::StrCat(JobKey(job), " ", std::string(role)), hosts, {},
                             CertificateUse::kServerAndClient, kJobCertificateLifetime);
}

// Every certificate from a new CA into `data`.
absl::Status AddEverything(const v1alpha1::TrainingJob& job, json& data) {
  absl::StatusOr<PemKeyPair> ca =
      NewJobCertificateAuthority(absl::StrCat("trainingjob CA ", JobKey(job)), kJobCertificateLifetime);
  if (!ca.ok()) return ca.status();
  data[v1alpha1::kJobCaCertSecretKey] = absl::Base64Escape(ca->cert_pem);
  data[v1alpha1::kJobCaKeySecretKey] = absl::Base64Escape(ca->key_pem);
  for (ReplicaType type : v1alpha1::kReplicaTypes) {
    const std::vector<std::string> hosts = DesiredHosts(job, type);
    if (hosts.empty()) continue;  // issued when the job gets replicas of the type
    const std::string_view role = v1alpha1::ReplicaTypeLowerName(type);
    absl::StatusOr<PemKeyPair> cert = IssueRole(job, *ca, role, hosts);
    if (!cert.ok()) return cert.status();
    Put(data, std::string(role), *cert);
  }
  const std::string control(JobRoleName(JobRole::kControl));
  absl::StatusOr<PemKeyPair> cert = IssueJobCertificate(
      *ca, absl::StrCat(JobKey(job), " ", control), {}, {}, CertificateUse::kClient,
      kJobCertificateLifetime);
  if (!cert.ok()) return cert.status();
  Put(data, control, *cert);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<json> NewJobTlsSecretData(const v1alpha1::TrainingJob& job) {
  json data = json::object();
  if (absl::Status s = AddEverything(job, data); !s.ok()) return s;
  return data;
}

bool HasJobTls(const json& data) {
  return !Decoded(data, v1alpha1::kJobCaCertSecretKey).empty();
}

absl::StatusOr<json> JobTlsSecretUpdate(const v1alpha1::TrainingJob& job, const json& data) {
  json update = json::object();
  if (!HasJobTls(data)) {
    if (absl::Status s = AddEverything(job, update); !s.ok()) return s;
    return update;
  }
  const PemKeyPair ca{Decoded(data, v1alpha1::kJobCaCertSecretKey),
                      Decoded(data, v1alpha1::kJobCaKeySecretKey)};
  for (ReplicaType type : v1alpha1::kReplicaTypes) {
    const std::vector<std::string> desired = DesiredHosts(job, type);
    if (desired.empty()) continue;
    const std::string role(v1alpha1::ReplicaTypeLowerName(type));
    const std::string key = v1alpha1::JobCertSecretKey(role);
    std::set<std::string> names;
    if (const std::string cert = Decoded(data, key); !cert.empty()) {
      absl::StatusOr<std::vector<std::string>> held = CertificateDnsNames(cert);
      if (!held.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("secret key ", key, ": ", held.status().message()));
      }
      names.insert(held->begin(), held->end());
    }
    bool missing = false;
    for (const std::string& host : desired) missing |= names.insert(host).second;
    if (!missing) continue;
    // The names it had stay: a scale-down and up again never re-issues, and every name is the
    // job's own.
    absl::StatusOr<PemKeyPair> cert =
        IssueRole(job, ca, role, std::vector<std::string>(names.begin(), names.end()));
    if (!cert.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("secret keys ", v1alpha1::kJobCaCertSecretKey, "/",
                       v1alpha1::kJobCaKeySecretKey, ": ", cert.status().message()));
    }
    Put(update, role, *cert);
  }
  return update;
}

std::shared_ptr<const CoordinatorTls> ControlTlsFromSecret(const v1alpha1::TrainingJob& job,
                                                           const json& data) {
  const std::string control(JobRoleName(JobRole::kControl));
  auto tls = std::make_shared<CoordinatorTls>();
  tls->ca_pem = Decoded(data, v1alpha1::kJobCaCertSecretKey);
  tls->cert_pem = Decoded(data, v1alpha1::JobCertSecretKey(control));
  tls->key_pem = Decoded(data, v1alpha1::JobKeySecretKey(control));
  if (tls->ca_pem.empty() || tls->cert_pem.empty() || tls->key_pem.empty()) return nullptr;
  const std::vector<std::string> coordinator = DesiredHosts(job, ReplicaType::kCoordinator);
  tls->server_name = coordinator.empty() ? "" : coordinator.front();
  return tls;
}

}  // namespace tj::op
