// Encodes a TrainingJob back to its JSON form: what the operator sends to the API server and
// what `tjctl` prints. Unset optional fields are left out; pod templates are written verbatim.
#pragma once

#include "api/v1alpha1/types.h"
#include "nlohmann/json.hpp"

namespace tj::v1alpha1 {

nlohmann::json TrainingJobToJson(const TrainingJob& job);

}  // namespace tj::v1alpha1
