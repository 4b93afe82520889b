// The TLS half of a job's Secret (keys in api/v1alpha1/labels.h; docs/decisions.md "Session 7:
// TLS"): a CA made for the job, one certificate per replica role naming the Service DNS names of
// that role's replicas (TF_CONFIG's hosts), and the operator's client-only control certificate.
// Pods mount their role's pair and the CA; the CA's key never leaves the Secret and the operator.
// Pure functions of the job and the Secret's data (base64 values, as the API server holds them).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "api/v1alpha1/types.h"
#include "nlohmann/json.hpp"
#include "operator/controller/coordinator_rpc.h"

namespace tj::op {

// Data for a new job's Secret: a new CA and every certificate.
absl::StatusOr<nlohmann::json> NewJobTlsSecretData(const v1alpha1::TrainingJob& job);

// What the Secret's `data` must gain for the job's pods to run TLS, as merge-patch data, or an
// empty object when nothing:
//  - no CA (a Secret of an operator before TLS): everything, as for a new job;
//  - a role's certificate that does not name every desired replica of the role (the job was
//    scaled up): that role's certificate again, from the job's CA.
// InvalidArgument naming the key when the Secret's CA or a certificate does not parse.
absl::StatusOr<nlohmann::json> JobTlsSecretUpdate(const v1alpha1::TrainingJob& job,
                                                  const nlohmann::json& data);

// Whether `data` holds the job's CA (its pods can be given TLS).
bool HasJobTls(const nlohmann::json& data);

// The operator's TLS client side for the job's coordinator from the Secret's `data`; null when
// the Secret has no control certificate.
std::shared_ptr<const CoordinatorTls> ControlTlsFromSecret(const v1alpha1::TrainingJob& job,
                                                           const nlohmann::json& data);

}  // namespace tj::op
