// A kubeconfig file as tj-operator and tjctl load it (KUBECONFIG): YAML with clusters, users,
// contexts, inline certificates, exec plugins. The bytes are written to a file, as the loader reads
// files (and resolves paths relative to them).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "operator/kube/kube_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/tj-kubeconfig-fuzz-" + std::to_string(::getpid());
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  (void)tj::kube::LoadKubeConfigFiles({path});
  return 0;
}
