// TF_CONFIG for one replica, in TensorFlow's format, so the runtime's TFConfigClusterResolver and
// an unmodified TensorFlow ParameterServerStrategy program both read it: the Coordinator is the
// "chief", PS tasks are "ps", workers are "worker", environment "cloud".
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "api/v1alpha1/field_error.h"
#include "api/v1alpha1/types.h"
#include "jobcontrol/replicas.h"

namespace tj {

// "chief", "ps", "worker".
std::string_view TfTaskType(ReplicaType type);

// The TF_CONFIGs of one job's replicas. Every replica's lists the whole cluster and differs only in
// its task, so the cluster is rendered once: a reconcile creating n pods writes n TF_CONFIGs of
// O(n) bytes each, never n clusters of n addresses each looked up in a map.
class TfConfigRenderer {
 public:
  // Every desired replica needs an address; addresses of replicas the job does not have are
  // ignored. InvalidArgument naming the replica whose address is missing.
  static absl::StatusOr<TfConfigRenderer> Create(const v1alpha1::TrainingJob& job,
                                                 const ReplicaAddresses& addresses);

  // {"cluster": {...}, "environment": "cloud", "task": {"index": 1, "type": "worker"}}, compact.
  // InvalidArgument for a replica outside the job, or when "TF_CONFIG=<value>" would not fit in
  // one environment string (Linux's MAX_ARG_STRLEN), naming the job and the replica.
  absl::StatusOr<std::string> Render(ReplicaType type, int index) const;

  // OK when every replica's TF_CONFIG fits (the longest one is checked, without rendering any).
  absl::Status CheckAllFit() const;

 private:
  TfConfigRenderer() = default;
  size_t RenderedSize(ReplicaType type, int index) const;
  absl::Status TooLarge(ReplicaType type, int index) const;

  std::string job_;  // "<namespace>/<name>", for messages
  std::map<ReplicaType, int> counts_;
  std::string cluster_;  // the "cluster" object, rendered
};

// One replica's TF_CONFIG (a TfConfigRenderer for one use).
absl::StatusOr<std::string> RenderTfConfig(const v1alpha1::TrainingJob& job,
                                           const ReplicaAddresses& addresses, ReplicaType type,
                                           int index);

// The TF_CONFIG size rule on a cluster (the addresses of ClusterServiceAddresses, the namespace
// "default" when the job names none) as a field error on spec.replicaSpecs: what `tjctl validate`
// reports and what the operator fails a job with before creating anything. Empty when it fits.
// Call only for a job within the replica limits (ValidateTrainingJob passed).
v1alpha1::FieldErrors CheckClusterTfConfigSize(const v1alpha1::TrainingJob& job);

}  // namespace tj
