// spec.checkpoint.volume in and out of JSON, its defaults and its rules (docs/
// trainingjob-schema.md, "Checkpoint volume"); called from decode.cc, encode.cc, defaults.cc and
// validation.cc for the checkpoint section.
#pragma once

#include <string>
#include <string_view>

#include "api/v1alpha1/checkpoint_volume.h"
#include "api/v1alpha1/field_error.h"
#include "nlohmann/json.hpp"

namespace tj::v1alpha1 {

// Strict, like the rest of the decoder: unknown fields and enum spellings are errors at `path`.
CheckpointVolume DecodeCheckpointVolume(const nlohmann::json& value, const std::string& path,
                                        FieldErrors& errors);
nlohmann::json CheckpointVolumeToJson(const CheckpointVolume& volume);
// reclaimPolicy Retain; a template's accessModes [ReadWriteMany].
void DefaultCheckpointVolume(CheckpointVolume& volume);
// `dir` is spec.checkpoint.dir, which must lie on the mounted volume.
void ValidateCheckpointVolume(const CheckpointVolume& volume, std::string_view dir,
                              FieldErrors& errors);

// A Kubernetes quantity ("10Gi", "500M", "1e9", "1.5Ti") greater than zero.
bool IsPositiveQuantity(std::string_view text);

}  // namespace tj::v1alpha1
