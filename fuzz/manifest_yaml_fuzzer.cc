// A TrainingJob manifest as `tjctl validate` and `tjctl run` read it: YAML (or JSON) text through
// the size, depth and alias limits, the YAML-to-JSON conversion, decoding, defaults, validation.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/v1alpha1/load.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  tj::v1alpha1::CheckedTrainingJob checked = tj::v1alpha1::CheckTrainingJobText(text);
  // Every error must format (its message and position are what the user sees).
  (void)tj::v1alpha1::FormatFieldErrors("fuzz.yaml", checked.errors);
  return 0;
}
