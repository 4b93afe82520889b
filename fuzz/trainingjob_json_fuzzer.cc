// A TrainingJob as the operator receives it from the API server (JSON): decoding, defaults and
// validation of whatever object shape arrives, and the status JSON read back from it.
#include <cstddef>
#include <cstdint>

#include "api/v1alpha1/load.h"
#include "api/v1alpha1/status_json.h"
#include "nlohmann/json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json manifest = nlohmann::json::parse(data, data + size, nullptr,
                                                        /*allow_exceptions=*/false);
  if (manifest.is_discarded()) return 0;
  tj::v1alpha1::CheckedTrainingJob checked = tj::v1alpha1::CheckTrainingJobJson(manifest);
  (void)tj::v1alpha1::FormatFieldErrors("fuzz.json", checked.errors);
  if (manifest.is_object() && manifest.contains("status")) {
    tj::v1alpha1::FieldErrors errors;
    const tj::v1alpha1::TrainingJobStatus status =
        tj::v1alpha1::DecodeTrainingJobStatus(manifest["status"], "status", errors);
    // What decodes must encode again (the operator writes it back).
    if (errors.empty()) (void)tj::v1alpha1::TrainingJobStatusToJson(status).dump();
  }
  return 0;
}
