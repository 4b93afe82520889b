// Reading a TrainingJob manifest end to end: text (YAML or JSON) -> JSON -> decode -> defaults ->
// validation. `tjctl validate` wants every problem; `tjctl run` and other callers want the job or
// one error that lists them all.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "api/v1alpha1/field_error.h"
#include "api/v1alpha1/types.h"
#include "api/v1alpha1/validation.h"
#include "nlohmann/json.hpp"

namespace tj::v1alpha1 {

struct CheckedTrainingJob {
  std::optional<TrainingJob> job;  // defaulted; set only when errors is empty
  FieldErrors errors;

  bool ok() const { return errors.empty(); }
};

// A manifest already parsed to JSON (e.g. an object from the API server).
CheckedTrainingJob CheckTrainingJobJson(const nlohmann::json& manifest,
                                        const ValidationOptions& options = {});
// YAML or JSON text holding exactly one TrainingJob.
CheckedTrainingJob CheckTrainingJobText(std::string_view text,
                                        const ValidationOptions& options = {});
// The same from a file; an unreadable file is one error without a field.
CheckedTrainingJob CheckTrainingJobFile(const std::string& path,
                                        const ValidationOptions& options = {});

// The defaulted, valid job, or InvalidArgument listing every problem as
// "<path>: <field>: <message>" (NotFound when the file does not exist).
absl::StatusOr<TrainingJob> LoadTrainingJobFile(const std::string& path,
                                                const ValidationOptions& options = {});
// The same for text; `source_name` starts each problem line.
absl::StatusOr<TrainingJob> ParseTrainingJob(std::string_view text, std::string_view source_name,
                                             const ValidationOptions& options = {});

}  // namespace tj::v1alpha1
