// Where a job's coordinator serves its Coordination service (preemption notices, progress) when a
// framework's own server holds the trainer port: a TensorFlow chief serves TensorFlow's gRPC server
// on its TF_CONFIG port (2222), so the `trainingjob` Python package (python/) serves ours beside
// it. The job says so by declaring a port named "tj-coordination" on the Coordinator's first
// container; the operator then renders TJ_COORDINATION_ADDRESS (":<port>") on the coordinator and
// sends notices and progress reads to that port, and `tjctl run` picks a free local port for it.
// Without the declaration the Coordination service is on the trainer port, as tj-train serves it.
#pragma once

#include <cstdint>
#include <optional>

#include "api/v1alpha1/field_error.h"
#include "api/v1alpha1/types.h"

namespace tj::v1alpha1 {

inline constexpr char kCoordinationPortName[] = "tj-coordination";

// The containerPort of the port named kCoordinationPortName on the Coordinator's first container;
// nullopt when there is none, or it is not a port number other than the trainer port.
std::optional<int32_t> CoordinationPort(const TrainingJob& job);

// A port of that name, on any container of any replica type (as the CRD's rule on the shared port
// schema), must be a port number other than the trainer port: the error names
// spec.replicaSpecs.<type>.template.spec.containers[c].ports[i].containerPort.
void ValidateCoordinationPort(const TrainingJob& job, FieldErrors& errors);

}  // namespace tj::v1alpha1
