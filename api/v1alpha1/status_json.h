// TrainingJobStatus <-> JSON, in the shape the status subresource stores (times as RFC 3339,
// replicaStatuses keyed by replica type name).
#pragma once

#include <string>

#include "api/v1alpha1/field_error.h"
#include "api/v1alpha1/status.h"
#include "nlohmann/json.hpp"

namespace tj::v1alpha1 {

// Unknown fields and wrong types are reported under `path` ("status.conditions[0].type").
TrainingJobStatus DecodeTrainingJobStatus(const nlohmann::json& value, const std::string& path,
                                          FieldErrors& errors);
nlohmann::json TrainingJobStatusToJson(const TrainingJobStatus& status);

// metav1.Time's form: "2024-05-01T12:00:00Z" (UTC, whole seconds).
std::string FormatKubernetesTime(absl::Time time);

}  // namespace tj::v1alpha1
