// spec.failurePolicy in and out of JSON and its rules (docs/trainingjob-schema.md, "Failure
// policy"); called from decode.cc, encode.cc and validation.cc.
#pragma once

#include <string>

#include "api/v1alpha1/failure_policy.h"
#include "api/v1alpha1/field_error.h"
#include "nlohmann/json.hpp"

namespace tj::v1alpha1 {

// Strict, like the rest of the decoder: unknown fields and enum spellings (an action, operator,
// replica type or condition that does not exist), a missing action or operator and an empty list
// are errors at their path.
FailurePolicy DecodeFailurePolicy(const nlohmann::json& value, const std::string& path,
                                  FieldErrors& errors);
nlohmann::json FailurePolicyToJson(const FailurePolicy& policy);
// The rest of what makes a rule unable to match, each an error naming it: neither or both of
// onExitCodes and onPodConditions, a duplicate, an exit code out of 0..255, or 0 with In (a
// replica that exited 0 has not failed, unless it was disrupted, which onPodConditions matches);
// and more than kMaxFailurePolicyRules rules.
void ValidateFailurePolicy(const FailurePolicy& policy, FieldErrors& errors);

// "spec.failurePolicy.rules[2]", as errors, conditions and events name a rule.
std::string FailurePolicyRulePath(size_t index);

}  // namespace tj::v1alpha1
