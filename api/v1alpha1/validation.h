// The TrainingJob validation rules shared by `tjctl validate`, `tjctl run` and the operator: every
// problem is returned, each with its field path. docs/trainingjob-schema.md lists the rules and
// how the CRD expresses each one (OpenAPI or CEL), so both sides reject the same manifests.
#pragma once

#include <string_view>

#include "api/v1alpha1/field_error.h"
#include "api/v1alpha1/pod_template_validation.h"
#include "api/v1alpha1/types.h"

namespace tj::v1alpha1 {

struct ValidationOptions {
  ValidationTarget target = ValidationTarget::kCluster;
};

// Pod and Service names ("<job>-<type>-<index>") are RFC 1035/1123 labels.
inline constexpr size_t kMaxReplicaNameLength = 63;

// The rules of docs/trainingjob-schema.md that decoding does not already enforce (types, unknown
// fields and enum spellings are DecodeTrainingJob's). Meant for a defaulted job, but unset
// optional fields are read as their defaults. The status is not validated: the operator owns it.
FieldErrors ValidateTrainingJob(const TrainingJob& job, const ValidationOptions& options = {});

// The longest metadata.name whose replica names all fit in kMaxReplicaNameLength, given the
// spec's replica counts (the largest index has the most digits).
size_t MaxJobNameLength(const TrainingJobSpec& spec);

}  // namespace tj::v1alpha1
