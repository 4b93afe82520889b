// Decodes a TrainingJob from its JSON form (a parsed YAML file, or an object from the API
// server), strictly: unknown fields outside pod templates, wrong types and unsupported enum values
// are reported with their field paths. Range and cross-field rules are validation.h's.
#pragma once

#include "api/v1alpha1/field_error.h"
#include "api/v1alpha1/types.h"
#include "nlohmann/json.hpp"

namespace tj::v1alpha1 {

struct DecodedTrainingJob {
  // Best effort: a field that could not be decoded is left unset.
  TrainingJob job;
  FieldErrors errors;
};

DecodedTrainingJob DecodeTrainingJob(const nlohmann::json& manifest);

}  // namespace tj::v1alpha1
