// TF_CONFIG for one replica, in TensorFlow's format, so the runtime's TFConfigClusterResolver and
// an unmodified TensorFlow ParameterServerStrategy program both read it: the Coordinator is the
// "chief", PS tasks are "ps", workers are "worker", environment "cloud".
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "api/v1alpha1/types.h"
#include "jobcontrol/replicas.h"

namespace tj {

// "chief", "ps", "worker".
std::string_view TfTaskType(ReplicaType type);

// {"cluster": {"chief": [...], "ps": [...], "worker": [...]}, "environment": "cloud",
//  "task": {"type": "worker", "index": 1}}, compact. Every desired replica needs an address;
// addresses of replicas the job does not have are ignored. InvalidArgument for a replica outside
// the job or a missing address (naming the replica).
absl::StatusOr<std::string> RenderTfConfig(const v1alpha1::TrainingJob& job,
                                           const ReplicaAddresses& addresses, ReplicaType type,
                                           int index);

}  // namespace tj
