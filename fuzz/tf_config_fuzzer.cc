// TF_CONFIG, the JSON every task of a job reads from its environment: the cluster, the task, the
// addresses, through TFConfigClusterResolver's checks.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "coordinator/resolver/tf_config_cluster_resolver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto resolver = tj::TFConfigClusterResolver::FromJson(text);
  if (!resolver.ok()) return 0;
  // What a task asks of its resolver once TF_CONFIG is accepted.
  (void)(*resolver)->cluster_spec();
  (void)(*resolver)->master();
  return 0;
}
