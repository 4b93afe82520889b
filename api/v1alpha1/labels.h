// The names the operator stamps on every object it creates for a job, and which the
// KubernetesClusterResolver, dashboards and `kubectl get -l` read back: labels, the trainer's
// port, the job's token Secret. Part of the schema contract, like runtime_env.h.
#pragma once

#include <string>
#include <string_view>

namespace tj::v1alpha1 {

// Labels on every Pod and Service of a job. Values: the job's name; the replica type in lower case
// ("coordinator", "ps", "worker": ReplicaTypeLowerName); the replica index in decimal.
inline constexpr char kJobNameLabel[] = "trainingjob.dev/job-name";
inline constexpr char kReplicaTypeLabel[] = "trainingjob.dev/replica-type";
inline constexpr char kReplicaIndexLabel[] = "trainingjob.dev/replica-index";

// Every replica serves its RPCs (Worker, PS, Coordination on the coordinator) on this port, as
// TensorFlow's TFJob convention does; TF_CONFIG names "<replica>.<namespace>.svc:2222".
inline constexpr int kTrainerPort = 2222;
inline constexpr char kTrainerPortName[] = "tj-port";

// The Secret holding the job's secret (key "token", which only the operator reads) and what it
// derives from it (coordinator/base/job_roles.h): one credential per role under the role's name
// ("coordinator", "ps", "worker", "control") and the verifiers of them all ("verifiers"). Each pod
// mounts only its own role's key and the verifiers, read-only, at kJobTokenMountPath;
// TJ_TOKEN_FILE and TJ_TOKEN_VERIFIERS_FILE point at the files.
inline constexpr char kJobTokenSecretKey[] = "token";
inline constexpr char kJobVerifiersSecretKey[] = "verifiers";
inline constexpr char kJobTokenVolumeName[] = "tj-job-token";
inline constexpr char kJobTokenMountPath[] = "/var/run/secrets/trainingjob.dev/job-token";
inline std::string JobTokenSecretName(std::string_view job_name) {
  return std::string(job_name) + "-job-token";
}

// TLS material in the same Secret (operator/controller/job_tls_secret.h): the job's CA
// ("ca.crt"; its key "ca.key" is the operator's only), one certificate and key per replica role
// ("<role>.crt", "<role>.key") and the operator's client certificate ("control.crt",
// "control.key"). A pod mounts the CA and its role's pair as ca.crt, tls.crt and tls.key in
// kJobTlsSubdir of the token volume; TJ_TLS_DIR points there.
inline constexpr char kJobCaCertSecretKey[] = "ca.crt";
inline constexpr char kJobCaKeySecretKey[] = "ca.key";
inline constexpr char kJobTlsSubdir[] = "tls";
inline std::string JobCertSecretKey(std::string_view role) { return std::string(role) + ".crt"; }
inline std::string JobKeySecretKey(std::string_view role) { return std::string(role) + ".key"; }

}  // namespace tj::v1alpha1
