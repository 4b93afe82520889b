// A coordinator's training progress as the operator reads it from the coordinator's key-value
// store (kProgressKey) and tjctl run from its progress file: JSON from another process, decoded
// by TrainingProgressFromJson. What decodes must survive the trip back (ToJson, as written).
#include <cstddef>
#include <cstdint>

#include "api/v1alpha1/training_progress.h"
#include "nlohmann/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json json = nlohmann::json::parse(data, data + size, nullptr,
                                                    /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  const auto progress = tj::v1alpha1::TrainingProgressFromJson(json);
  if (!progress.ok()) return 0;
  const nlohmann::json again = nlohmann::json::parse(tj::v1alpha1::ToJson(*progress).dump(),
                                                     nullptr, /*allow_exceptions=*/false);
  const auto decoded = tj::v1alpha1::TrainingProgressFromJson(again);
  if (!decoded.ok() || !(*decoded == *progress)) __builtin_trap();
  return 0;
}
